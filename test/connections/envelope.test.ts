/**
 * shared/envelope.ts in Node (the Worker runs the same WebCrypto): a sealed value opens only with
 * its KEK and its additional data, any tampered part fails closed, a KEK list rotates (the first
 * seals, every one opens), rewrap moves a value to the current KEK without touching its
 * ciphertext, and no error names a key or a plaintext.
 */
import { describe, expect, it } from 'vitest'
import {
  EnvelopeError,
  importKeyRing,
  type KeyRing,
  newKekEntry,
  open,
  rewrap,
  seal,
  sealedKekId,
} from '../../shared/envelope'

const ring = async (value: string) => (await importKeyRing(value)) as KeyRing
const PLAIN = 'a-vendor-secret-0123456789'
const AAD = 'conn:v1|c_aaaaaaaaaaaaaaaaaaaaaaaaaa|signing_secret|k1'

async function failure(work: Promise<unknown>) {
  const err = await work.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(EnvelopeError)
  expect(String((err as Error).message)).not.toContain(PLAIN)
  return (err as EnvelopeError).code
}

describe('envelope', () => {
  it('seals to a value that names its KEK, never holds the plaintext, and opens with the same AAD', async () => {
    const keys = await ring(newKekEntry('k1'))
    const sealed = await seal(keys, PLAIN, AAD)
    expect(sealed).toMatch(/^v1\.k1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    expect(sealed).not.toContain(PLAIN)
    expect(sealedKekId(sealed)).toBe('k1')
    expect(await open(keys, sealed, AAD)).toBe(PLAIN)
    expect(await seal(keys, PLAIN, AAD)).not.toBe(sealed)
  })

  it('refuses another AAD (a value copied to another connection, field or kid)', async () => {
    const keys = await ring(newKekEntry('k1'))
    const sealed = await seal(keys, PLAIN, AAD)
    expect(await failure(open(keys, sealed, AAD.replace('signing_secret', 'other')))).toBe(
      'sealed_unopenable',
    )
    expect(await failure(open(keys, sealed, AAD.replace('|k1', '|k2')))).toBe('sealed_unopenable')
  })

  it('fails closed when any part is tampered with', async () => {
    const keys = await ring(newKekEntry('k1'))
    const sealed = await seal(keys, PLAIN, AAD)
    const parts = sealed.split('.')
    for (const index of [2, 3, 4]) {
      const part = parts[index] as string
      const flipped = `${part.slice(0, 4)}${part[4] === 'A' ? 'B' : 'A'}${part.slice(5)}`
      const tampered = parts.map((p, i) => (i === index ? flipped : p)).join('.')
      expect(['sealed_unopenable', 'sealed_malformed']).toContain(
        await failure(open(keys, tampered, AAD)),
      )
    }
    expect(await failure(open(keys, 'v2.k1.a.b.c', AAD))).toBe('sealed_malformed')
    expect(await failure(open(keys, `${sealed}.x`, AAD))).toBe('sealed_malformed')
  })

  it('another ring: kek_unknown for a KEK it lacks, sealed_unopenable for one of the same id', async () => {
    const sealed = await seal(await ring(newKekEntry('k1')), PLAIN, AAD)
    expect(await failure(open(await ring(newKekEntry('k2')), sealed, AAD))).toBe('kek_unknown')
    expect(await failure(open(await ring(newKekEntry('k1')), sealed, AAD))).toBe(
      'sealed_unopenable',
    )
  })

  it('rotation: new,old seals with new and opens both; rewrap moves old values to new, ciphertext untouched', async () => {
    const old = newKekEntry('old')
    const next = newKekEntry('new')
    const before = await seal(await ring(old), PLAIN, AAD)
    const both = await ring(`${next},${old}`)
    expect(await open(both, before, AAD)).toBe(PLAIN)
    expect(sealedKekId(await seal(both, PLAIN, AAD))).toBe('new')
    const moved = await rewrap(both, before)
    expect(sealedKekId(moved)).toBe('new')
    expect(moved.split('.').slice(3)).toEqual(before.split('.').slice(3))
    expect(await open(await ring(next), moved, AAD)).toBe(PLAIN)
    expect(await rewrap(both, moved)).toBe(moved)
    expect(await failure(rewrap(await ring(next), before))).toBe('kek_unknown')
  })

  it('a malformed KEK list is refused naming the entry, never its value', async () => {
    const good = newKekEntry('k1')
    const err = await importKeyRing(`${good},k2:c2hvcnQ`).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(EnvelopeError)
    expect(String(err)).toContain('entry 2')
    expect(String(err)).not.toContain('c2hvcnQ')
    expect(String(err)).not.toContain(good.split(':')[1])
    expect(await importKeyRing('  ')).toBeNull()
    await expect(importKeyRing(`${good},${good}`)).rejects.toThrow(/entry 2/)
  })
})
