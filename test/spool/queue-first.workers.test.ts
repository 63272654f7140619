/**
 * QUEUE_FIRST_CHANNELS in workerd, against real Redis (through the Upstash stand-in) and the test
 * origin: a listed channel's first-seen event goes to the spool queue before any forward and is
 * answered once queued; the Worker's own `queue()` then stores it in a batch, each claim `done`;
 * a channel not listed, the API and a queue that refuses are forwarded as without the setting.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { settledValue } from '../../claims'
import {
  randomId,
  type SignedDelivery,
  slackDelivery,
  telegramDelivery,
} from '../../local/vendor-deliveries'
import { sha256Hex } from '../../shared/crypto'
import worker from '../../worker/index'
import type { SpoolMessage } from '../../worker/spool/message'
import { SPOOLED_VALUE } from '../support/claim-values'
import { GATEWAY, type Harness } from '../support/workerd/harness'
import { withQueues } from '../support/workerd/queues'

const SPOOL = 'inbound-dedup-spool'

async function decisionOf(h: Harness, delivery: SignedDelivery) {
  const response = await h.send(delivery)
  return { status: response.status, decision: response.headers.get('x-dedup-decision') }
}

/** The Worker's `queue()` on these messages as one batch: what it acked. */
async function consume(h: Harness, messages: SpoolMessage[]): Promise<string[]> {
  const batch = createMessageBatch(
    SPOOL,
    messages.map((body) => ({
      id: `msg-${randomId()}`,
      timestamp: new Date(),
      attempts: 1,
      body,
    })),
  )
  const ctx = createExecutionContext()
  await worker.queue(batch, h.env, ctx)
  return (await getQueueResult(batch, ctx)).explicitAcks
}

describe('QUEUE_FIRST_CHANNELS', () => {
  it('a listed channel is queued before any forward; the consumer stores the batch, each claim done, counted once', async () => {
    const { h, spool } = withQueues({ QUEUE_FIRST_CHANNELS: 'slack' })
    const deliveries = Array.from({ length: 5 }, () => slackDelivery())
    for (const d of deliveries) {
      expect(await decisionOf(h, d)).toEqual({ status: 200, decision: 'spooled' })
      expect(await h.redisGet(d.deliveryKey)).toMatch(SPOOLED_VALUE)
    }
    // Answered without the origin: nothing forwarded yet.
    expect((await h.originCalls()).calls).toEqual([])
    // A vendor's retry before the batch lands: a duplicate, still not forwarded.
    expect(await decisionOf(h, deliveries[0] as SignedDelivery)).toEqual({
      status: 200,
      decision: 'duplicate',
    })
    expect(spool.sent).toHaveLength(5)

    const acked = await consume(h, spool.sent)
    expect(acked).toHaveLength(5)
    const { rows, batches } = await h.originCalls()
    expect(rows).toBe(5)
    expect(batches).toEqual([5])
    for (const message of spool.sent) {
      expect(await h.redisGet(message.claimKey)).toBe(
        settledValue('done', message.event.payloadHash ?? ''),
      )
    }
    const stats = h.redisKey('dedup:stats')
    expect(await h.redis.hget(stats, 'spool_queued:slack')).toBe('5')
    expect(await h.redis.hget(stats, 'spool_delivered:slack')).toBe('5')

    // The same batch again (Queues deliver at least once): acked, no row more, counted again
    // only as delivered (what the backlog gauge subtracts is never below zero).
    expect(await consume(h, spool.sent)).toHaveLength(5)
    expect((await h.originCalls()).rows).toBe(5)
  })

  it('a channel not listed is forwarded as before', async () => {
    const { h, spool } = withQueues({ QUEUE_FIRST_CHANNELS: 'slack' })
    expect(await decisionOf(h, telegramDelivery({ messageId: 9 }))).toEqual({
      status: 200,
      decision: 'forwarded',
    })
    expect(spool.sent).toEqual([])
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('the queue refusing: forwarded inline after all, one row, not a retry answer', async () => {
    const { h, spool } = withQueues({ QUEUE_FIRST_CHANNELS: 'all' }, true)
    const d = slackDelivery()
    expect(await decisionOf(h, d)).toEqual({ status: 200, decision: 'forwarded' })
    expect(spool.sent).toEqual([])
    expect((await h.originCalls()).rows).toBe(1)
    expect(await decisionOf(h, d)).toEqual({ status: 200, decision: 'duplicate' })
  })

  it('all: every channel but the API, whose 201 carries the stored row', async () => {
    const apiKey = 'acme-queue-first-key'
    const { h, spool } = withQueues({
      QUEUE_FIRST_CHANNELS: 'all',
      API_KEYS: JSON.stringify({ [await sha256Hex(apiKey)]: 'acme' }),
    })
    expect(await decisionOf(h, telegramDelivery({ messageId: 11 }))).toMatchObject({
      decision: 'spooled',
    })
    const response = await h.deliver(
      new Request(`${GATEWAY}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${apiKey}`,
          'idempotency-key': `"${randomId()}"`,
        },
        body: JSON.stringify({ customer: { id: 'cust-1' }, text: 'hi' }),
      }),
    )
    expect(response.status).toBe(201)
    expect(response.headers.get('x-dedup-decision')).toBe('forwarded')
    expect(spool.sent.map((m) => m.event.channel)).toEqual(['telegram'])
  })
})
