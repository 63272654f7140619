/** The batch helpers' pure logic: bounded concurrency in order, and the combined HTTP reply. */
import { describe, expect, it } from 'vitest'
import { httpReply, plainReplies } from '../../worker/channels/replies'
import type { Outcome } from '../../worker/deliver'
import { mapBounded } from '../../worker/deliver-batch'

describe('mapBounded', () => {
  it('keeps the items order and never runs more than the limit at once', async () => {
    let running = 0
    let most = 0
    const results = await mapBounded([5, 1, 4, 2, 3, 0, 6], 3, async (ms) => {
      running++
      most = Math.max(most, running)
      await new Promise((resolve) => setTimeout(resolve, ms * 3))
      running--
      return ms * 10
    })
    expect(results).toEqual([50, 10, 40, 20, 30, 0, 60])
    expect(most).toBe(3)
  })

  it('an empty list is no work', async () => {
    expect(await mapBounded([], 8, async () => 1)).toEqual([])
  })
})

describe('httpReply of a batch', () => {
  const taken: Outcome = { decision: 'forwarded', decidedBy: 'redis' }
  const retry: Outcome = { decision: 'retry', decidedBy: 'gateway' }
  const rejected: Outcome = { decision: 'rejected', decidedBy: 'postgres' }

  it('ok only when every item is taken; a refused item counts as taken', () => {
    expect(httpReply(plainReplies, [taken, rejected, taken]).status).toBe(200)
    expect(httpReply(plainReplies, [taken, retry, taken]).status).toBe(503)
  })

  it('a single handshake answers its challenge as plain text', async () => {
    const reply = httpReply(plainReplies, [
      { decision: 'challenge', decidedBy: 'gateway', challenge: '1158201444' },
    ])
    expect(reply.status).toBe(200)
    expect(await reply.text()).toBe('1158201444')
  })
})
