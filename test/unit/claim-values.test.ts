import { describe, expect, it } from 'vitest'
import { decodeValue, inflightValue, newClaimToken, settledValue } from '../../claims'

describe('claim values', () => {
  it.each([
    [
      inflightValue('0123456789abcdef', 'aaaabbbbccccdddd'),
      { status: 'inflight', hash: 'aaaabbbbccccdddd' },
    ],
    [
      settledValue('done', 'aaaabbbbccccdddd'),
      { status: 'settled', state: 'done', hash: 'aaaabbbbccccdddd' },
    ],
    [
      settledValue('spooled', 'aaaabbbbccccdddd'),
      { status: 'settled', state: 'spooled', hash: 'aaaabbbbccccdddd' },
    ],
    // A flag from an older plain `SET NX` scheme: seen, hash unknown.
    ['1', { status: 'settled', state: 'done', hash: null }],
  ])('reads %s', (value, expected) => {
    expect(decodeValue(value)).toEqual(expected)
  })

  it('keeps values short (an in-flight value fits a Redis embedded string)', () => {
    expect(inflightValue(newClaimToken(), 'aaaabbbbccccdddd').length).toBeLessThanOrEqual(44)
  })

  it('makes a different token each time', () => {
    expect(new Set(Array.from({ length: 100 }, newClaimToken)).size).toBe(100)
  })
})
