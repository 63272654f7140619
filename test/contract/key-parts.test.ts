/**
 * Vendor ids of any spelling in delivery keys (contract/delivery-key.ts `keyPart`): an id with the
 * key's separator, `%`, `~`, control characters, lone surrogates or any length is one key part,
 * and two ids are never one part. So one tenant's key never meets another's: a key is
 * `dedup:{namespace}:{scope}:{id}`, every part free of `:`, each part one-to-one.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { formatDeliveryKey, keyPart } from '../../contract/delivery-key'

/** Ids as vendors print them, and as an attacker would craft them. */
const idArb = fc
  .oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom(':', '%', '~', '%3A', '~x', 'a:b', 'a%3Ab', '\n', '\u0000', '\ud800', '\udc00'),
    fc.string({ minLength: 150, maxLength: 600 }),
  )
  .filter((id) => id.length > 0)

describe('keyPart', () => {
  it('keeps every plain id as it is: the keys of ids the channels keyed before are unchanged', async () => {
    for (const id of [
      'Ev08XYZ',
      'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
      'm_AG5H-z2_Uq7',
      '325708',
    ]) {
      expect(await keyPart(id)).toBe(id)
    }
  })

  it("writes Meta's printed forms readably: `mid.1457764197618%3A41d102a3e1ae206a38`", async () => {
    expect(await keyPart('mid.1457764197618:41d102a3e1ae206a38')).toBe(
      'mid.1457764197618%3A41d102a3e1ae206a38',
    )
    expect(await keyPart('mid.$cAAD5QiNHkz1m6cyj11guxokwkhi2')).toBe(
      'mid.%24cAAD5QiNHkz1m6cyj11guxokwkhi2',
    )
  })

  it('is one part: no separator, no control character, at most 200 characters', async () => {
    await fc.assert(
      fc.asyncProperty(idArb, async (id) => {
        const part = await keyPart(id)
        expect(part.length).toBeGreaterThan(0)
        expect(part.length).toBeLessThanOrEqual(200)
        expect(part).toMatch(/^[A-Za-z0-9._+/=%~-]+$/)
      }),
      { numRuns: 500 },
    )
  })

  it('two different ids are never one part', async () => {
    await fc.assert(
      fc.asyncProperty(idArb, idArb, async (a, b) => {
        fc.pre(a !== b)
        expect(await keyPart(a)).not.toBe(await keyPart(b))
      }),
      { numRuns: 1000 },
    )
    // The pairs a naive escape confuses.
    const tricky = ['a:b', 'a%3Ab', 'a%253Ab', '~', '%7E', '\ud800', '\ufffd', '\u0000', '']
    const parts = await Promise.all(tricky.filter(Boolean).map(keyPart))
    expect(new Set(parts).size).toBe(parts.length)
  })

  it("one tenant's ids never make another tenant's key, whatever each names", async () => {
    await fc.assert(
      fc.asyncProperty(idArb, idArb, idArb, idArb, async (tenantA, idA, tenantB, idB) => {
        fc.pre(tenantA !== tenantB || idA !== idB)
        const key = async (tenant: string, id: string) =>
          formatDeliveryKey({
            namespace: 'line',
            scope: tenant,
            scopeTag: await keyPart(tenant),
            id: await keyPart(id),
          })
        expect(await key(tenantA, idA)).not.toBe(await key(tenantB, idB))
      }),
      { numRuns: 500 },
    )
  })
})
