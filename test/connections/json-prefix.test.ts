/**
 * The shared paths' pre-verification hint (worker/connections/json-prefix.ts) reads what
 * JSON.parse reads, from the first 8 KiB only, on every vendor payload of the corpus and on the
 * traps a body could set (the key inside a string, at another depth, in a later entry).
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { HINT_SCAN_CHARS, stringAt } from '../../worker/connections/json-prefix'

const PATHS: Record<string, Array<string | number>> = {
  line: ['destination'],
  'whatsapp-cloud': ['entry', 0, 'changes', 0, 'value', 'metadata', 'phone_number_id'],
  messenger: ['entry', 0, 'id'],
  instagram: ['entry', 0, 'id'],
}

function parsedAt(value: unknown, path: ReadonlyArray<string | number>): string | null {
  let at: unknown = value
  for (const step of path) {
    if (at === null || typeof at !== 'object') return null
    at = (at as Record<string | number, unknown>)[step]
  }
  return typeof at === 'string' ? at : null
}

const root = join(import.meta.dirname, '../corpus/payloads')

describe.each(Object.keys(PATHS))('%s: the corpus payloads', (channel) => {
  const dir = join(root, channel)
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'))
  it.each(files)('%s: the same id as JSON.parse', (file) => {
    const text = readFileSync(join(dir, file), 'utf8')
    const path = PATHS[channel] as Array<string | number>
    expect(stringAt(text, path)).toBe(parsedAt(JSON.parse(text), path))
  })
})

describe('the traps', () => {
  const path = ['entry', 0, 'id']
  it('the key inside a string, at another depth or in a later entry is not the id', () => {
    expect(stringAt('{"x":"\\"entry\\":[{\\"id\\":\\"1\\"}]","entry":[{"id":"2"}]}', path)).toBe(
      '2',
    )
    expect(stringAt('{"entry":[{"sender":{"id":"9"},"id":"3"}]}', path)).toBe('3')
    expect(stringAt('{"entry":[{"time":1},{"id":"4"}]}', path)).toBeNull()
    expect(stringAt('{"entry":[{"id":5}]}', path)).toBeNull()
    expect(stringAt('{"entry" : [ { "id" : "6" } ] }', path)).toBe('6')
  })

  it('past the first 8 KiB: no hint', () => {
    const padding = 'x'.repeat(HINT_SCAN_CHARS)
    expect(stringAt(`{"pad":"${padding}","entry":[{"id":"7"}]}`, path)).toBeNull()
  })
})
