/**
 * The spool in workerd, against real Redis (through the Upstash stand-in) and the test origin.
 * - Producer: an origin that cannot take an event now gets it on the spool queue, and the vendor
 *   is told "ok", with or without Redis. What cannot be queued gets the vendor's retry answer.
 * - Consumer: the ack / retry / dead-letter decision for each origin answer, one message at a
 *   time (`createMessageBatch` + the Worker's own `queue()`), and the dead-letter consumer's
 *   report to the origin.
 * - The real queue binding from wrangler.toml, producer to consumer, inside the pool.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test'
import { describe, expect, inject, it } from 'vitest'
import { settledValue } from '../../claims'
import { type InboundEvent, jsonBytes, LIMITS, parseInboundEvent } from '../../contract/event'
import {
  randomId,
  type SignedDelivery,
  slackDelivery,
  slackMessageEvent,
  slackRequest,
  telegramDelivery,
  twilioDelivery,
} from '../../local/vendor-deliveries'
import { EVENT_CHANNELS } from '../../worker/channels'
import type { ChannelDelivery } from '../../worker/channels/types'
import { type OriginConfig, settingsFor } from '../../worker/config'
import type { Env } from '../../worker/env'
import { forwardEvent } from '../../worker/forward'
import worker from '../../worker/index'
import { MAX_SPOOL_MESSAGE_BYTES } from '../../worker/spool/claim-check'
import type { DeadMessage, SpoolMessage } from '../../worker/spool/message'
import { DONE_VALUE, SPOOLED_VALUE } from '../support/claim-values'
import { deliverToCore } from '../support/workerd/core'
import { GATEWAY, type Harness, harness } from '../support/workerd/harness'
import { largestEvent } from '../support/workerd/largest-event'
import { RecordingQueue, withQueues } from '../support/workerd/queues'

const SPOOL = 'inbound-dedup-spool'
const SPOOL_DEAD = 'inbound-dedup-spool-dead'

interface ChannelCase {
  name: string
  delivery(): SignedDelivery
  /** What "ok" looks like to this vendor. */
  okBody: string
}

const CASES: ChannelCase[] = [
  { name: 'slack', delivery: () => slackDelivery(), okBody: '' },
  {
    name: 'twilio (whatsapp)',
    delivery: () => twilioDelivery(),
    okBody: '<?xml version="1.0" encoding="UTF-8"?><Response/>',
  },
  { name: 'telegram', delivery: () => telegramDelivery(), okBody: '' },
]

describe.each(CASES)('$name with the origin down', ({ delivery, okBody }) => {
  it('answers ok, queues the normalized event, marks the claim spooled; a replay is not forwarded', async () => {
    const { h, spool } = withQueues()
    const d = delivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })

    const response = await h.send(d)
    expect(response.status).toBe(200)
    expect(await response.text()).toBe(okBody)

    expect(spool.sent).toHaveLength(1)
    const [message] = spool.sent as [SpoolMessage]
    expect(message).toMatchObject({ v: 2, claimKey: d.deliveryKey })
    expect(message.event.deliveryKey).toBe(d.deliveryKey)
    expect(await h.redisGet(d.deliveryKey)).toBe(
      settledValue('spooled', message.event.payloadHash ?? ''),
    )
    expect(await h.redisTtl(d.deliveryKey)).toBeGreaterThan(86_000)

    const replay = await h.send(d)
    expect(replay.status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(1)
    expect(spool.sent).toHaveLength(1)
  })

  it('with Redis down too: still ok and queued (the queue does not need Redis)', async () => {
    const { h, spool } = withQueues({ UPSTASH_REDIS_REST_URL: inject('deadRedisUrl') })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const response = await h.send(delivery())
    expect(response.status).toBe(200)
    expect(await response.text()).toBe(okBody)
    expect(spool.sent).toHaveLength(1)
  })
})

describe('what cannot be queued gets the retry answer, and the claim is released', () => {
  it('the queue refuses the send', async () => {
    const { h } = withQueues({}, true)
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const d = slackDelivery()
    const response = await h.send(d)
    expect(response.status).toBe(503)
    expect(response.headers.get('x-slack-no-retry')).toBeNull()
    expect(await h.redisGet(d.deliveryKey)).toBeNull()
  })

  it('an event over the queue message limit (128 KB) with no R2 bucket bound', async () => {
    const { h, spool } = withQueues({ SPOOL_BODIES: undefined })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const eventId = `Ev${randomId()}`
    // 45,000 three-byte characters: 135 KB of UTF-8, inside the body and event limits.
    const big = slackMessageEvent({ eventId, ts: `${Date.now() / 1000}`, text: '€'.repeat(45_000) })
    expect((await h.deliver(await slackRequest(`${GATEWAY}/webhooks/slack`, big))).status).toBe(503)
    expect(await h.redisGet(`dedup:slack:A123ABC456:${eventId}`)).toBeNull()
    expect(spool.sent).toEqual([])
  })

  it('a channel left out of SPOOL_CHANNELS', async () => {
    const { h, spool } = withQueues({ SPOOL_CHANNELS: 'whatsapp,sms' })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const d = slackDelivery()
    expect((await h.send(d)).status).toBe(503)
    expect(await h.redisGet(d.deliveryKey)).toBeNull()
    expect(spool.sent).toEqual([])
  })

  it('no queue bound at all', async () => {
    const h = harness({ SPOOL: undefined })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const d = slackDelivery()
    expect((await h.send(d)).status).toBe(503)
    expect(await h.redisGet(d.deliveryKey)).toBeNull()
  })
})

describe('an event the origin refuses for good on the live path', () => {
  it('the vendor is told ok (its retries cannot help) and the event is recorded as a dead letter', async () => {
    const { h, spool, dead } = withQueues()
    await h.setOriginMode({ kind: 'reject' })
    const d = slackDelivery()
    expect((await h.send(d)).status).toBe(200)
    expect(spool.sent).toEqual([])
    expect(dead.sent).toHaveLength(1)
    expect(dead.sent[0]).toMatchObject({
      claimKey: d.deliveryKey,
      event: { deliveryKey: d.deliveryKey },
      dead: { attempts: 1, error: 'origin refused it: 400 invalid_event' },
    })
    // The claim was released: once the cause is fixed, a vendor retry could still land it.
    expect(await h.redisGet(d.deliveryKey)).toBeNull()
  })
})

describe('an event kept nowhere is never answered ok', () => {
  it('the origin refuses it for good and no dead-letter queue is bound: the retry answer', async () => {
    const h = harness({ SPOOL_DEAD: undefined })
    await h.setOriginMode({ kind: 'reject' })
    const d = slackDelivery()
    const response = await h.send(d)
    expect(response.status).toBe(503)
    expect(response.headers.get('x-slack-no-retry')).toBeNull()
    // Released: the vendor's retry runs again, and lands once the cause is fixed.
    expect(await h.redisGet(d.deliveryKey)).toBeNull()
    await h.setOriginMode({ kind: 'ok' })
    expect((await h.send(d)).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('the origin refuses it for good and the dead-letter queue refuses the send: the retry answer', async () => {
    const h = harness({
      SPOOL: new RecordingQueue<SpoolMessage>() as unknown as Env['SPOOL'],
      SPOOL_DEAD: new RecordingQueue<DeadMessage>(true) as unknown as Env['SPOOL_DEAD'],
    })
    await h.setOriginMode({ kind: 'reject' })
    const d = telegramDelivery()
    expect((await h.send(d)).status).toBe(503)
    expect(await h.redisGet(d.deliveryKey)).toBeNull()
  })

  it('the origin refuses a large event for good and no R2 bucket is bound: the retry answer', async () => {
    const { h, dead } = withQueues({ SPOOL_BODIES: undefined })
    await h.setOriginMode({ kind: 'reject' })
    const { delivery } = await largestEvent('slack')
    const { outcomes, status } = await runCore(h, [delivery])
    expect(status).toBe(503)
    expect(outcomes.map((o) => [o.decision, o.reason])).toEqual([
      ['retry', 'refused_event_not_recorded'],
    ])
    expect(dead.sent).toEqual([])
  })
})

const runCore = (h: Harness, items: readonly ChannelDelivery[]) => deliverToCore(h.env, items)

const bodies = (h: Harness) => h.env.SPOOL_BODIES as R2Bucket

describe.each(EVENT_CHANNELS)('the largest %s event the schema accepts', (channel) => {
  it('is over a queue message, within LIMITS.eventBytes', async () => {
    const { event } = await largestEvent(channel)
    expect(parseInboundEvent(event).ok).toBe(true)
    expect(jsonBytes(event)).toBeGreaterThan(LIMITS.eventBytes - 16)
    expect(jsonBytes(event)).toBeGreaterThan(MAX_SPOOL_MESSAGE_BYTES)
    // Twenty bytes more, each field within its own bound: refused, in bytes.
    const over = { ...event, tenant: `${event.tenant}${'x'.repeat(20)}` }
    expect(parseInboundEvent(over)).toEqual({
      ok: false,
      message: 'invalid event: (root): event too large',
    })
  })

  it('origin down: spooled through R2, lands once, its object deleted', async () => {
    const { h, spool } = withQueues()
    const { delivery, event } = await largestEvent(channel)
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const first = await runCore(h, [delivery])
    expect(first.status).toBe(200)
    expect(first.outcomes.map((o) => o.decision)).toEqual(['spooled'])
    const [message] = spool.sent as unknown as [Record<string, unknown>]
    expect(message.event).toBeUndefined()
    expect(jsonBytes(message)).toBeLessThanOrEqual(MAX_SPOOL_MESSAGE_BYTES)
    const eventKey = message.eventKey as string
    expect(eventKey).toMatch(/^spool\/[0-9a-f-]{36}$/)
    expect(await (await bodies(h).get(eventKey))?.json()).toEqual(event)

    await h.setOriginMode({ kind: 'ok' })
    const { ids, acked } = await consume(h, SPOOL, [message])
    expect(acked).toEqual(ids)
    expect(await h.redisGet(event.deliveryKey)).toMatch(DONE_VALUE)
    expect(await bodies(h).head(eventKey)).toBeNull()
    // The vendor's retry, and the message delivered again: still one row.
    expect((await runCore(h, [delivery])).status).toBe(200)
    const { calls, rows } = await h.originCalls()
    expect(rows).toBe(1)
    expect(calls.filter((c) => c.answered === 201).map((c) => c.body)).toEqual([event.body])
  })

  it('refused for good: dead-lettered through R2, recorded whole, replayed once the cause is fixed', async () => {
    const { h, dead } = withQueues()
    const { delivery, event } = await largestEvent(channel)
    await h.setOriginMode({ kind: 'reject' })
    const refused = await runCore(h, [delivery])
    expect(refused.status).toBe(200)
    expect(refused.outcomes.map((o) => o.decision)).toEqual(['rejected'])
    const [letter] = dead.sent as unknown as [Record<string, unknown>]
    expect(letter.event).toBeUndefined()
    const eventKey = letter.eventKey as string
    expect(await bodies(h).head(eventKey)).not.toBeNull()

    await h.setOriginMode({ kind: 'ok' })
    const { ids, acked } = await consume(h, SPOOL_DEAD, [letter])
    expect(acked).toEqual(ids)
    const [report] = (await h.originCalls()).dead
    expect(report?.event).toEqual(event)
    expect(await bodies(h).head(eventKey)).toBeNull()

    // The replay: what channel_failures kept, through the origin's parse and ingest, twice.
    const kept = parseInboundEvent(report?.event)
    if (!kept.ok) throw new Error(kept.message)
    const origin = settingsFor(h.env).origin as OriginConfig
    for (let replay = 0; replay < 2; replay++) {
      expect((await forwardEvent(origin, kept.event, 5_000)).kind).toBe('accepted')
    }
    expect((await h.originCalls()).rows).toBe(1)
  })
})

describe('a large queued event the origin refuses in the consumer', () => {
  it('its dead letter carries the same R2 key; the object goes once the origin recorded it', async () => {
    const { h, spool, dead } = withQueues()
    const { delivery, event } = await largestEvent('email')
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await runCore(h, [delivery])
    const [message] = spool.sent as unknown as [Record<string, unknown>]
    await h.setOriginMode({ kind: 'reject' })
    expect((await consume(h, SPOOL, [message])).retried).toEqual([])
    const [letter] = dead.sent as unknown as [Record<string, unknown>]
    expect(letter.eventKey).toBe(message.eventKey)
    expect(letter.dead).toMatchObject({ error: 'origin refused it: 400 invalid_event' })
    expect(await bodies(h).head(message.eventKey as string)).not.toBeNull()

    await h.setOriginMode({ kind: 'ok' })
    await consume(h, SPOOL_DEAD, [letter])
    expect((await h.originCalls()).dead.map((d) => d.event)).toEqual([event])
    expect(await bodies(h).head(message.eventKey as string)).toBeNull()
  })
})

describe('a queued event whose R2 object is gone (expired, deleted by hand)', () => {
  it('is dead-lettered and recorded saying so, not retried for ever', async () => {
    const { h, spool, dead } = withQueues()
    const { delivery, event } = await largestEvent('telegram')
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await runCore(h, [delivery])
    const [message] = spool.sent as unknown as [Record<string, unknown>]
    await bodies(h).delete(message.eventKey as string)
    await h.setOriginMode({ kind: 'ok' })
    const { ids, acked } = await consume(h, SPOOL, [message])
    expect(acked).toEqual(ids)
    const [letter] = dead.sent
    expect(letter?.dead.error).toBe(
      'unreadable message: its event in R2: event_body_missing: no such object (expired?)',
    )
    await consume(h, SPOOL_DEAD, [letter])
    const [report] = (await h.originCalls()).dead
    expect(report?.deliveryKey).toBe(event.deliveryKey)
    expect(report?.error).toContain('; its event in R2: event_body_missing')
  })
})

describe('a queued event delivered again after it landed (its R2 object deleted)', () => {
  it('is acked as delivered: no dead letter, no failure row for an event that is a row', async () => {
    const { h, spool, dead } = withQueues()
    const { delivery } = await largestEvent('telegram')
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await runCore(h, [delivery])
    const [message] = spool.sent as unknown as [Record<string, unknown>]
    await h.setOriginMode({ kind: 'ok' })
    expect((await consume(h, SPOOL, [message])).acked).toHaveLength(1)
    expect(await bodies(h).head(message.eventKey as string)).toBeNull()
    // Queues deliver at least once: the same message again, after its ack.
    const { ids, acked } = await consume(h, SPOOL, [message])
    expect(acked).toEqual(ids)
    expect(dead.sent).toEqual([])
    expect((await h.originCalls()).rows).toBe(1)
  })
})

describe('a queued event whose R2 object is over LIMITS.eventBytes (not one the producer wrote)', () => {
  it('is not read: dead-lettered as unreadable', async () => {
    const { h, spool, dead } = withQueues()
    const { delivery } = await largestEvent('sms')
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await runCore(h, [delivery])
    const [message] = spool.sent as unknown as [Record<string, unknown>]
    await bodies(h).put(message.eventKey as string, 'x'.repeat(LIMITS.eventBytes + 1))
    await h.setOriginMode({ kind: 'ok' })
    await consume(h, SPOOL, [message])
    expect(dead.sent[0]?.dead.error).toContain('event_body_too_large')
    expect((await h.originCalls()).rows).toBe(0)
  })

  it('one that is not JSON is dead-lettered as unreadable, not retried until the queue drops it', async () => {
    const { h, spool, dead } = withQueues()
    const { delivery } = await largestEvent('sms')
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await runCore(h, [delivery])
    const [message] = spool.sent as unknown as [Record<string, unknown>]
    await bodies(h).put(message.eventKey as string, '{"not": "json')
    await h.setOriginMode({ kind: 'ok' })
    const consumed = await consume(h, SPOOL, [message])
    expect(consumed.retried).toEqual([])
    expect(dead.sent[0]?.dead.error).toContain('event_body_unreadable')
    expect((await h.originCalls()).rows).toBe(0)
  })
})

/** Queues one event per delivery with the origin down; returns the messages as sent. */
async function queuedMessages(h: Harness, spool: RecordingQueue<SpoolMessage>, n: number) {
  await h.setOriginMode({ kind: 'fail', status: 503 })
  for (let i = 0; i < n; i++) await h.send(slackDelivery())
  expect(spool.sent).toHaveLength(n)
  return spool.sent.splice(0)
}

interface Consumed {
  acked: string[]
  retried: string[]
}

/** Runs the Worker's `queue()` on a batch, as the runtime would, and reads each decision. */
async function consume(
  h: Harness,
  queue: string,
  bodies: unknown[],
  attempts = 1,
): Promise<Consumed & { ids: string[] }> {
  const ids = bodies.map(() => `msg-${randomId()}`)
  const batch = createMessageBatch(
    queue,
    bodies.map((body, i) => ({
      id: ids[i] as string,
      timestamp: new Date(),
      attempts,
      body,
    })),
  )
  const ctx = createExecutionContext()
  await worker.queue(batch, h.env, ctx)
  const result = await getQueueResult(batch, ctx)
  return {
    ids,
    acked: result.explicitAcks,
    retried: result.retryMessages.map((m: { msgId: string }) => m.msgId),
  }
}

describe('the spool consumer', () => {
  it('origin takes it (201): ack, one row, the claim becomes done', async () => {
    const { h, spool } = withQueues()
    const [message] = (await queuedMessages(h, spool, 1)) as [SpoolMessage]
    await h.setOriginMode({ kind: 'ok' })

    const { ids, acked, retried } = await consume(h, SPOOL, [message])

    expect(acked).toEqual(ids)
    expect(retried).toEqual([])
    const { calls, rows } = await h.originCalls()
    expect(calls.map((c) => c.answered)).toEqual([503, 201])
    expect(rows).toBe(1)
    expect(await h.redisGet(message.claimKey)).toBe(
      settledValue('done', message.event.payloadHash ?? ''),
    )
  })

  it('origin had it already (200 duplicate): ack, still one row', async () => {
    const { h, spool } = withQueues()
    const [message] = (await queuedMessages(h, spool, 1)) as [SpoolMessage]
    await h.setOriginMode({ kind: 'ok' })
    await consume(h, SPOOL, [message])
    const again = await consume(h, SPOOL, [message])
    expect(again.acked).toEqual(again.ids)
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('origin refuses it for good (400): no retry, onto the dead letters (recorded for replay), ack', async () => {
    const { h, spool, dead } = withQueues()
    const [message] = (await queuedMessages(h, spool, 1)) as [SpoolMessage]
    await h.setOriginMode({ kind: 'reject' })
    const { ids, acked, retried } = await consume(h, SPOOL, [message])
    expect(acked).toEqual(ids)
    expect(retried).toEqual([])
    expect(dead.sent).toHaveLength(1)
    expect(dead.sent[0]).toMatchObject({
      claimKey: message.claimKey,
      dead: { attempts: 1, error: 'origin refused it: 400 invalid_event' },
    })
  })

  it.each([
    ['5xx', { kind: 'fail', status: 500 }],
    ['a configuration 4xx (401 after a secret rotation)', { kind: 'fail', status: 401 }],
    ['a timeout', { kind: 'delay', ms: 2_000 }],
  ] as const)('origin fails with %s: retried, not acked', async (_, mode) => {
    const { h, spool } = withQueues({ ORIGIN_TIMEOUT_MS: '500' })
    const [message] = (await queuedMessages(h, spool, 1)) as [SpoolMessage]
    await h.setOriginMode(mode)
    const { ids, acked, retried } = await consume(h, SPOOL, [message])
    expect(retried).toEqual(ids)
    expect(acked).toEqual([])
    expect(await h.redisGet(message.claimKey)).toMatch(SPOOLED_VALUE)
  })

  it('a poisoned event among good ones: the good ones land, only it is retried', async () => {
    const { h, spool } = withQueues()
    const messages = await queuedMessages(h, spool, 5)
    const poisoned = messages[2] as SpoolMessage
    await h.setOriginMode({
      kind: 'poison',
      deliveryKeys: [poisoned.event.deliveryKey],
      status: 500,
    })
    const { ids, acked, retried } = await consume(h, SPOOL, messages)
    expect(retried).toEqual([ids[2]])
    expect(acked.sort()).toEqual(ids.filter((_, i) => i !== 2).sort())
    expect((await h.originCalls()).rows).toBe(4)
  })

  it('a queue batch goes to the origin in one signed request; each message settles on its own answer', async () => {
    const { h, spool, dead } = withQueues()
    const messages = await queuedMessages(h, spool, 6)
    await h.setOriginMode({ kind: 'ok' })
    // One of them landed already (a vendor retry went through): a duplicate, acked all the same.
    await consume(h, SPOOL, [messages[0]])
    const { ids, acked, retried } = await consume(h, SPOOL, messages)
    expect(acked.sort()).toEqual([...ids].sort())
    expect(retried).toEqual([])
    expect(dead.sent).toEqual([])
    const { batches, rows, calls } = await h.originCalls()
    expect(batches).toEqual([1, 6])
    expect(rows).toBe(6)
    expect(calls.slice(-6).map((c) => c.answered)).toEqual([200, 201, 201, 201, 201, 201])
    for (const message of messages) {
      expect(await h.redisGet(message.claimKey)).toBe(
        settledValue('done', message.event.payloadHash ?? ''),
      )
    }
  })

  it('a batch refused as a whole (a proxy 413): each event forwarded on its own, all land', async () => {
    const { h, spool } = withQueues()
    const messages = await queuedMessages(h, spool, 3)
    await h.setOriginMode({ kind: 'ok', batch: false })
    const { ids, acked } = await consume(h, SPOOL, messages)
    expect(acked.sort()).toEqual([...ids].sort())
    const { batches, rows } = await h.originCalls()
    expect(batches).toEqual([])
    expect(rows).toBe(3)
  })

  it('out of attempts (SPOOL_MAX_ATTEMPTS): onto the dead-letter queue with the last error, then ack', async () => {
    const { h, spool, dead } = withQueues({ SPOOL_MAX_ATTEMPTS: '3' })
    const [message] = (await queuedMessages(h, spool, 1)) as [SpoolMessage]
    expect((await consume(h, SPOOL, [message], 2)).retried).toHaveLength(1)
    expect(dead.sent).toEqual([])

    const last = await consume(h, SPOOL, [message], 3)

    expect(last.acked).toEqual(last.ids)
    expect(dead.sent).toHaveLength(1)
    expect(dead.sent[0]).toMatchObject({
      claimKey: message.claimKey,
      event: { deliveryKey: message.event.deliveryKey },
      dead: { attempts: 3, error: 'origin 503' },
    })
  })

  it('an unreadable message goes to the dead letters at once and does not hold the batch', async () => {
    const { h, spool, dead } = withQueues()
    const [good] = (await queuedMessages(h, spool, 1)) as [SpoolMessage]
    await h.setOriginMode({ kind: 'ok' })
    const { ids, acked } = await consume(h, SPOOL, [{ v: 1, not: 'a spool message' }, good])
    expect(acked.sort()).toEqual([...ids].sort())
    expect(dead.sent).toHaveLength(1)
    expect(dead.sent[0]?.dead.error).toContain('unreadable message')
    expect((await h.originCalls()).rows).toBe(1)
  })
})

describe('the dead-letter consumer', () => {
  async function deadMessage(h: Harness, spool: RecordingQueue<SpoolMessage>) {
    const [message] = (await queuedMessages(h, spool, 1)) as [SpoolMessage]
    const dead: DeadMessage = { ...message, dead: { attempts: 20, error: 'origin 500', at: 1 } }
    return { message, dead }
  }

  it('records the dead event at the origin (signed), then acks', async () => {
    const { h, spool } = withQueues()
    const { message, dead } = await deadMessage(h, spool)
    await h.setOriginMode({ kind: 'ok' })
    const { ids, acked } = await consume(h, SPOOL_DEAD, [dead])
    expect(acked).toEqual(ids)
    expect((await h.originCalls()).dead).toEqual([
      {
        channel: 'slack',
        deliveryKey: (message.event as InboundEvent).deliveryKey,
        event: message.event,
        error: 'origin 500',
        attempts: 20,
        answered: 201,
      },
    ])
  })

  it('keeps retrying while the origin cannot take the report', async () => {
    const { h, spool } = withQueues()
    const { dead } = await deadMessage(h, spool)
    const { ids, retried, acked } = await consume(h, SPOOL_DEAD, [dead])
    expect(retried).toEqual(ids)
    expect(acked).toEqual([])
  })

  it('a message Cloudflare moved there itself (max_retries ran out) is recorded too', async () => {
    const { h, spool } = withQueues()
    const [message] = (await queuedMessages(h, spool, 1)) as [SpoolMessage]
    await h.setOriginMode({ kind: 'ok' })
    const { acked, ids } = await consume(h, SPOOL_DEAD, [message], 1)
    expect(acked).toEqual(ids)
    const [report] = (await h.originCalls()).dead
    expect(report?.error).toContain('max_retries')
  })
})

describe('the real queue binding (wrangler.toml), producer to consumer', () => {
  it('origin down, then back: the queued event lands once and the claim becomes done', async () => {
    const h = harness({}, { shared: true })
    const d = slackDelivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    expect((await h.send(d)).status).toBe(200)
    await h.setOriginMode({ kind: 'ok' })

    // The consumer runs by itself: within a batch timeout, or after a retry's backoff.
    const deadline = Date.now() + 20_000
    while (Date.now() < deadline && !DONE_VALUE.test((await h.redisGet(d.deliveryKey)) ?? '')) {
      await new Promise((r) => setTimeout(r, 200))
    }
    expect(await h.redisGet(d.deliveryKey)).toMatch(DONE_VALUE)
    const { calls } = await h.originCalls()
    const ours = calls.filter((c) => c.deliveryKey === d.deliveryKey).map((c) => c.answered)
    expect(ours).toEqual([503, 201])
  })
})

describe('spool retries, counted for the console (decision counters, POST /v1/decisions)', () => {
  it('events the origin fails in a consumer batch: counted as retried per channel and reason, flushed from the queue handler', async () => {
    const { h, spool } = withQueues()
    const messages = await queuedMessages(h, spool, 4)
    const failing = [messages[1], messages[3]] as SpoolMessage[]
    await h.setOriginMode({
      kind: 'poison',
      deliveryKeys: failing.map((m) => m.event.deliveryKey),
      status: 503,
    })
    // Counters on for the consumer only: the flush runs, when due, in the queue handler's
    // waitUntil, which getQueueResult waits for.
    const counting = { ...h, env: { ...h.env, DECISION_FLUSH_SECONDS: '1' } }
    const { ids, retried } = await consume(counting, SPOOL, messages)
    expect(retried.sort()).toEqual([ids[1], ids[3]].sort())

    const { decisions } = await h.originCalls()
    const rows = decisions.filter((row) => row.decision === 'retried')
    expect(rows.map(({ channel, decidedBy, reason }) => ({ channel, decidedBy, reason }))).toEqual([
      { channel: 'slack', decidedBy: 'gateway', reason: 'origin_503' },
    ])
    expect(rows.reduce((n, row) => n + row.count, 0)).toBe(2)
  })

  it('the origin down for the whole batch: the flush fails too; the next batch past the interval sends the counts, once', async () => {
    const { h, spool } = withQueues()
    const messages = await queuedMessages(h, spool, 3)
    const counting = { ...h, env: { ...h.env, DECISION_FLUSH_SECONDS: '1' } }
    // Still down (queuedMessages left it failing): every message retried, every flush refused.
    const failed = await consume(counting, SPOOL, messages)
    expect(failed.retried.sort()).toEqual([...failed.ids].sort())
    const retriedRows = async () =>
      (await h.originCalls()).decisions.filter((row) => row.decision === 'retried')
    expect(await retriedRows()).toEqual([])

    await h.setOriginMode({ kind: 'ok' })
    // A batch never waits for a flush: the next one is sent once the interval (1 s) has passed.
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const landed = await consume(counting, SPOOL, messages, 2)
    expect(landed.acked.sort()).toEqual([...landed.ids].sort())
    const rows = await retriedRows()
    expect(rows.map((row) => [row.channel, row.reason])).toEqual([['slack', 'origin_503']])
    expect(rows.reduce((n, row) => n + row.count, 0)).toBe(3)
  })

  // Last: it leaves retries held in this isolate's counters for a later flush.
  it('a batch is never held for the flush interval (workerd ends a queue batch with its waitUntil work)', async () => {
    const { h, spool } = withQueues()
    const messages = await queuedMessages(h, spool, 2)
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    const counting = { ...h, env: { ...h.env, DECISION_FLUSH_SECONDS: '5' } }
    for (let batch = 0; batch < 2; batch++) {
      const started = Date.now()
      const { retried } = await consume(counting, SPOOL, messages, batch + 1)
      expect(retried).toHaveLength(2)
      expect(Date.now() - started).toBeLessThan(2_000)
    }
  })
})
