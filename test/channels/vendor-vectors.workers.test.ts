/** The vendors' official vectors again, inside workerd: Web Crypto there must agree with Node's. */
import { describe, expect, it } from 'vitest'
import { CRYPTO_BACKEND } from '../../shared/crypto'
import { SIGNATURE_VECTORS } from './support/vendor-vectors'

describe('vendor vectors in workerd', () => {
  it("runs on Web Crypto (not nodejs_compat's node:crypto)", () => {
    expect(CRYPTO_BACKEND).toBe('web-crypto')
  })

  it.each(SIGNATURE_VECTORS)('$name', async ({ compute, expected }) => {
    expect(await compute()).toBe(expected)
  })
})
