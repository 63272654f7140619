/** The vendors' published known-answer vectors in Node (test/workers/vectors.test.ts: in workerd). */
import { expect, it } from 'vitest'
import { SIGNATURE_VECTORS } from './vendor-vectors'

it.each(SIGNATURE_VECTORS)('reproduces the $name vector', async ({ compute, expected }) => {
  expect(await compute()).toBe(expected)
})
