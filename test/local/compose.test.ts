/**
 * compose.yaml's origin, read from the file (no Docker here): it gets what the console, `/metrics`
 * and the claims need (OPERATOR_TOKEN, the Upstash settings), every variable it sets is one the
 * origin reads, and its plain-HTTP port is published on the loopback interface only.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../../local/wrangler-config'
import { ORIGIN_SETTINGS } from '../../origin/settings'

interface Service {
  environment: Record<string, string>
  ports: string[]
}

/** One service of compose.yaml: its `environment` mapping and `ports` list (our file's shape). */
function composeService(name: string): Service {
  const lines = readFileSync(join(REPO_ROOT, 'compose.yaml'), 'utf8').split('\n')
  const start = lines.indexOf(`  ${name}:`)
  expect(start).toBeGreaterThan(0)
  const service: Service = { environment: {}, ports: [] }
  let block = ''
  for (const line of lines.slice(start + 1)) {
    if (/^ {0,2}\S/.test(line)) break // the next service, or the end of services
    const key = /^ {4}(\w+):\s*$/.exec(line)?.[1]
    if (key) block = key
    else if (/^ {4}\w/.test(line)) block = ''
    const entry = /^ {6}(\w+): (.*)$/.exec(line)
    if (block === 'environment' && entry) service.environment[entry[1] ?? ''] = entry[2] ?? ''
    const item = /^ {6}- "?([^"]+)"?$/.exec(line)?.[1]
    if (block === 'ports' && item) service.ports.push(item)
  }
  return service
}

describe('compose.yaml', () => {
  const origin = composeService('origin')

  it('gives the origin OPERATOR_TOKEN (required) and the Worker’s Upstash settings', () => {
    expect(origin.environment.OPERATOR_TOKEN).toMatch(/^\$\{OPERATOR_TOKEN:\?/)
    for (const name of ['UPSTASH_REDIS_REST_URL', 'UPSTASH_REDIS_REST_TOKEN', 'REDIS_KEY_PREFIX']) {
      expect(origin.environment[name]).toBe(`\${${name}:-}`)
    }
  })

  it('sets only variables the origin reads', () => {
    const known = new Set(ORIGIN_SETTINGS.map((row) => row.name))
    expect(Object.keys(origin.environment).filter((name) => !known.has(name))).toEqual([])
  })

  it('publishes the plain-HTTP port on 127.0.0.1 only', () => {
    expect(origin.ports).toEqual(['127.0.0.1:8788:8788'])
  })
})
