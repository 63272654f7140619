/** The vendors' official vectors again, inside workerd: Web Crypto there must agree with Node's. */
import { describe, expect, it } from 'vitest'
import { SIGNATURE_VECTORS } from '../unit/vendor-vectors'

describe('vendor vectors in workerd', () => {
  it.each(SIGNATURE_VECTORS)('$name', async ({ compute, expected }) => {
    expect(await compute()).toBe(expected)
  })
})
