import { describe, expect, it } from 'vitest'
import {
  channelTtlSetting,
  decodeValue,
  inflightValue,
  newClaimToken,
  readChannelTtl,
  sameHash,
  settledValue,
} from '../../claims'

describe('claim values', () => {
  it.each([
    [
      inflightValue('0123456789abcdef', 'aaaabbbbccccdddd'),
      { status: 'inflight', hash: 'aaaabbbbccccdddd' },
    ],
    [
      settledValue('done', 'aaaabbbbccccdddd'),
      { status: 'settled', state: 'done', hash: 'aaaabbbbccccdd' },
    ],
    [
      settledValue('spooled', 'aaaabbbbccccdddd'),
      { status: 'settled', state: 'spooled', hash: 'aaaabbbbccccdd' },
    ],
    // The first 56 bits of a hash that starts with zeros keep their leading zeros.
    [
      settledValue('done', '00000000000000ab'),
      { status: 'settled', state: 'done', hash: '00000000000000' },
    ],
    // The text form, written for a hash that is not lower-case hex.
    ['done|aaaabbbbccccdddd', { status: 'settled', state: 'done', hash: 'aaaabbbbccccdddd' }],
    ['spooled|aaaabbbbccccdddd', { status: 'settled', state: 'spooled', hash: 'aaaabbbbccccdddd' }],
    // A value this module does not write: seen, hash unknown.
    ['1', { status: 'settled', state: 'done', hash: null }],
  ])('reads %s', (value, expected) => {
    expect(decodeValue(value)).toEqual(expected)
  })

  it('keeps values short (an in-flight value fits a Redis embedded string)', () => {
    expect(inflightValue(newClaimToken(), 'aaaabbbbccccdddd').length).toBeLessThanOrEqual(44)
  })

  it('writes a settled value as one decimal integer (Redis keeps it in the value object)', () => {
    const hash = 'ffffffffffffffffff'
    expect(settledValue('done', hash)).toBe(`${(BigInt('0xffffffffffffff') + 1n) * 10n + 1n}`)
    expect(settledValue('spooled', hash)).toMatch(/^[1-9][0-9]{1,18}2$/)
    // Below 2^63: Redis int-encodes it.
    expect(BigInt(settledValue('spooled', hash)) < 2n ** 63n).toBe(true)
    expect(settledValue('done', 'aaaabbbbccccdddd')).toMatch(/^[1-9][0-9]+1$/)
  })

  it('tells a payload mismatch by the stored prefix of the hash', () => {
    const stored = decodeValue(settledValue('done', 'aaaabbbbccccdddd'))
    if (stored.status !== 'settled' || stored.hash === null) throw new Error('not settled')
    expect(sameHash(stored.hash, 'aaaabbbbccccdddd')).toBe(true)
    expect(sameHash(stored.hash, 'aaaabbbbccccddde')).toBe(true) // past the 56 bits kept
    expect(sameHash(stored.hash, 'aaaabbbbccccddef')).toBe(true)
    expect(sameHash(stored.hash, 'aaaabbbbcccc0ddd')).toBe(false)
  })

  it('makes a different token each time', () => {
    expect(new Set(Array.from({ length: 100 }, newClaimToken)).size).toBe(100)
  })
})

describe('per-channel dedup TTL settings', () => {
  const day = 86_400
  const meta = channelTtlSetting('DEDUP_TTL_SECONDS_X', 8 * day)
  const plain = channelTtlSetting('DEDUP_TTL_SECONDS_Y')

  it('a row per channel: its default is its horizon, else the global default', () => {
    expect(meta).toMatchObject({ name: 'DEDUP_TTL_SECONDS_X', kind: 'int', default: 8 * day })
    expect(plain.default).toBe(day)
  })

  it('its own variable, else the larger of its horizon and DEDUP_TTL_SECONDS; invalid warns', () => {
    const warnings: string[] = []
    expect(readChannelTtl({}, meta, day, warnings)).toBe(8 * day)
    expect(readChannelTtl({}, meta, 10 * day, warnings)).toBe(10 * day)
    expect(readChannelTtl({}, plain, day, warnings)).toBe(day)
    // A channel without a horizon follows a lowered global TTL.
    expect(readChannelTtl({}, plain, 3_600, warnings)).toBe(3_600)
    expect(readChannelTtl({ DEDUP_TTL_SECONDS_X: '600' }, meta, day, warnings)).toBe(600)
    expect(warnings).toEqual([])
    expect(readChannelTtl({ DEDUP_TTL_SECONDS_X: '10' }, meta, day, warnings)).toBe(8 * day)
    expect(warnings).toEqual([
      'DEDUP_TTL_SECONDS_X must be an integer from 60 to 2592000 (default 691200)',
    ])
  })
})
