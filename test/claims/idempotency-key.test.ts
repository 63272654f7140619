/**
 * The key rules of claims/idempotency-key.ts: an Idempotency-Key (a Structured Field string, or
 * the same characters bare) and the request fingerprint (method, path, canonical body).
 */
import { describe, expect, it } from 'vitest'
import {
  canonicalJson,
  parseIdempotencyKey,
  requestFingerprint,
} from '../../claims/idempotency-key'

describe('parseIdempotencyKey', () => {
  it.each([
    ['"8e03978e-40d5-43e8-bc93-6894a57f9324"', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
    ['8e03978e-40d5-43e8-bc93-6894a57f9324', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
    ['"with space and \\"quote\\""', 'with space and "quote"'],
    [`"${'x'.repeat(255)}"`, 'x'.repeat(255)],
    ['  "padded"  ', 'padded'],
  ])('%s is the key %s', (header, key) => {
    expect(parseIdempotencyKey(header)).toEqual({ ok: true, key })
  })

  it.each([null, undefined, '', '   '])('%s is missing', (header) => {
    expect(parseIdempotencyKey(header)).toEqual({ ok: false, code: 'idempotency_key_missing' })
  })

  it.each([
    '""',
    `"${'x'.repeat(256)}"`,
    'x'.repeat(256),
    '"a", "b"',
    'a, b',
    '"a";p=1',
    '"unterminated',
    'bare space',
    'semi;colon',
    '"tab\there"',
    '"é"',
  ])('%s is malformed', (header) => {
    expect(parseIdempotencyKey(header)).toEqual({ ok: false, code: 'idempotency_key_malformed' })
  })
})

describe('requestFingerprint', () => {
  it('key order and whitespace are the same request; values, method and path are not', async () => {
    const base = await requestFingerprint('POST', '/v1/messages', '{"a":1,"b":{"c":[1,2]}}')
    expect(
      await requestFingerprint('post', '/v1/messages', ' { "b": {"c": [1, 2]}, "a": 1 } '),
    ).toBe(base)
    expect(await requestFingerprint('POST', '/v1/messages', '{"a":1,"b":{"c":[2,1]}}')).not.toBe(
      base,
    )
    expect(await requestFingerprint('PUT', '/v1/messages', '{"a":1,"b":{"c":[1,2]}}')).not.toBe(
      base,
    )
    expect(await requestFingerprint('POST', '/v1/other', '{"a":1,"b":{"c":[1,2]}}')).not.toBe(base)
  })

  it('a body that is no JSON is taken as its bytes', async () => {
    expect(await requestFingerprint('POST', '/x', 'a b')).not.toBe(
      await requestFingerprint('POST', '/x', 'a  b'),
    )
  })

  it('canonical JSON sorts keys at every depth and keeps arrays in order', () => {
    expect(canonicalJson({ b: [{ y: 1, x: 2 }], a: null })).toBe('{"a":null,"b":[{"x":2,"y":1}]}')
  })
})
