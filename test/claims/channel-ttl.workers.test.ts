/**
 * Per-channel dedup TTL (`DEDUP_TTL_SECONDS_{CHANNEL}`, claims/settings.ts), inside workerd with
 * real Redis: a channel's `done`, `spooled` and recorded claims live for its own TTL, and the
 * queue consumer's `done` for the one the queued message carries; other channels keep theirs.
 */

import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { randomId, slackDelivery, telegramDelivery } from '../../local/vendor-deliveries'
import type { Env } from '../../worker/env'
import worker from '../../worker/index'
import type { SpoolMessage } from '../../worker/spool/message'
import { DONE_VALUE, SPOOLED_VALUE } from '../support/claim-values'
import { harness } from '../support/workerd/harness'
import { RecordingQueue } from '../support/workerd/queues'

const HOUR = 3_600
const slackTtl = { DEDUP_TTL_SECONDS_SLACK: String(2 * HOUR) } as Partial<Env>

/** The Worker's own `queue()` on one spool message, as the runtime would call it. */
async function consumeOne(env: Env, body: unknown): Promise<void> {
  const batch = createMessageBatch('inbound-dedup-spool', [
    { id: `m-${randomId()}`, timestamp: new Date(), attempts: 1, body },
  ])
  const ctx = createExecutionContext()
  await worker.queue(batch, env, ctx)
  await getQueueResult(batch, ctx)
}

describe('per-channel dedup TTL', () => {
  it("a channel's done claim lives for its own TTL; another channel keeps DEDUP_TTL_SECONDS", async () => {
    const h = harness(slackTtl)
    const slack = slackDelivery()
    const telegram = telegramDelivery()
    expect((await h.send(slack)).status).toBe(200)
    expect((await h.send(telegram)).status).toBe(200)
    const slackLeft = await h.redisTtl(slack.deliveryKey)
    expect(slackLeft).toBeGreaterThan(2 * HOUR - 60)
    expect(slackLeft).toBeLessThanOrEqual(2 * HOUR)
    expect(await h.redisTtl(telegram.deliveryKey)).toBeGreaterThan(23 * HOUR)
  })

  it('spooled claims and the consumer’s done use the channel’s TTL (carried in the message)', async () => {
    const spool = new RecordingQueue<SpoolMessage>()
    const h = harness({ ...slackTtl, SPOOL: spool as unknown as Env['SPOOL'] })
    const slack = slackDelivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    expect((await h.send(slack)).status).toBe(200)
    expect(await h.redisGet(slack.deliveryKey)).toMatch(SPOOLED_VALUE)
    expect(await h.redisTtl(slack.deliveryKey)).toBeLessThanOrEqual(2 * HOUR)
    const [message] = spool.sent as [SpoolMessage]
    expect(message.ttlSeconds).toBe(2 * HOUR)

    // The consumer's `done` after a Redis flush (the key gone) lives as long, too.
    await h.redis.del(h.redisKey(slack.deliveryKey))
    await h.setOriginMode({ kind: 'ok' })
    await consumeOne(h.env, message)
    expect(await h.redisGet(slack.deliveryKey)).toMatch(DONE_VALUE)
    const left = await h.redisTtl(slack.deliveryKey)
    expect(left).toBeGreaterThan(2 * HOUR - 60)
    expect(left).toBeLessThanOrEqual(2 * HOUR)
  })

  it('a message queued without a TTL (before it existed) gets DEDUP_TTL_SECONDS', async () => {
    const spool = new RecordingQueue<SpoolMessage>()
    const h = harness({ ...slackTtl, SPOOL: spool as unknown as Env['SPOOL'] })
    const slack = slackDelivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await h.send(slack)
    const { ttlSeconds: _, ...old } = spool.sent[0] as SpoolMessage
    await h.redis.del(h.redisKey(slack.deliveryKey))
    await h.setOriginMode({ kind: 'ok' })
    await consumeOne(h.env, old)
    expect(await h.redisTtl(slack.deliveryKey)).toBeGreaterThan(23 * HOUR)
  })
})
