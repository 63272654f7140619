/** The vendors' published known-answer vectors, Node (workerd: vendor-vectors.workers.test.ts). */
import { expect, it } from 'vitest'
import { CRYPTO_BACKEND } from '../../shared/crypto'
import { SIGNATURE_VECTORS } from './support/vendor-vectors'

it("runs on Node's own crypto (workerd's Web Crypto in vendor-vectors.workers.test.ts)", () => {
  expect(CRYPTO_BACKEND).toBe('node:crypto')
})

it.each(SIGNATURE_VECTORS)('reproduces the $name vector', async ({ compute, expected }) => {
  expect(await compute()).toBe(expected)
})
