/**
 * What the channels' workerd tests check after a refused delivery, written once: nothing was
 * claimed in Redis under the test's prefix and nothing reached the origin.
 */
import { expect } from 'vitest'
import type { Harness } from '../../support/workerd/harness'

export async function nothingWritten(h: Harness): Promise<void> {
  expect(await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])).toEqual([])
  expect((await h.originCalls()).calls).toHaveLength(0)
}
