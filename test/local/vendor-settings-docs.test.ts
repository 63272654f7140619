/**
 * Vendor settings an operator must change, said where they configure the vendor: LINE sends each
 * POST once unless Webhook redelivery is on (it is off by default), so the README's Routes row and
 * docs/deploying.md's vendor step both say to turn it on, and why
 * (test/channels/line/line.workers.test.ts has what the gateway answers LINE).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..', '..')
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')

describe('LINE: Webhook redelivery, said where LINE is configured', () => {
  it("the README's Routes row for /webhooks/line says to turn it on, and what is lost without it", () => {
    const row = read('README.md')
      .split('\n')
      .find((line) => line.startsWith('| `/webhooks/line`'))
    expect(row).toMatch(/Turn on \*\*Webhook redelivery\*\*/)
    expect(row).toMatch(/off by default/)
    expect(row).toMatch(/loses that POST's events/)
  })

  it("docs/deploying.md's vendor step says it too", () => {
    const text = read('docs/deploying.md').replace(/\s+/g, ' ')
    expect(text).toMatch(/LINE: turn on \*\*Webhook redelivery\*\*/)
    expect(text).toMatch(/any non-2xx the gateway answers loses its events/)
  })
})
