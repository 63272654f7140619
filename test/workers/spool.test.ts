/**
 * The spool in workerd, against real Redis (through the Upstash stand-in) and the test origin:
 * an origin that cannot take an event now gets it later from the cron drain, exactly once, and
 * the vendor is told "ok" in between. Redis down as well: the vendor's retry status.
 */
import {
  createExecutionContext,
  createScheduledController,
  waitOnExecutionContext,
} from 'cloudflare:test'
import { describe, expect, inject, it } from 'vitest'
import type { Env } from '../../worker/env'
import worker from '../../worker/index'
import {
  slackMessageEvent,
  slackRequest,
  telegramRequest,
  telegramUpdate,
} from '../unit/signed-requests'
import {
  type Delivery,
  slackDelivery,
  telegramDelivery,
  uniq,
  whatsappDelivery,
} from './support/deliveries'
import { GATEWAY, type Harness, harness } from './support/harness'

interface ChannelCase {
  name: string
  /** The event channel: names the spool list. */
  channel: string
  delivery(): Delivery
  /** What "ok" looks like to this vendor. */
  okBody: string
}

const CASES: ChannelCase[] = [
  { name: 'slack', channel: 'slack', delivery: slackDelivery, okBody: '' },
  {
    name: 'twilio (whatsapp)',
    channel: 'whatsapp',
    delivery: whatsappDelivery,
    okBody: '<?xml version="1.0" encoding="UTF-8"?><Response/>',
  },
  { name: 'telegram', channel: 'telegram', delivery: telegramDelivery, okBody: '' },
]

const slackCase = CASES[0] as ChannelCase

/** One cron run of the real Worker module with this test's env. */
async function drain(env: Env): Promise<void> {
  const ctx = createExecutionContext()
  await worker.scheduled(
    createScheduledController({ scheduledTime: Date.now(), cron: '* * * * *' }),
    env,
    ctx,
  )
  await waitOnExecutionContext(ctx)
}

function spoolKey(h: Harness, channel: string): string {
  return h.redisKey(`spool:${channel}`)
}

async function spooled(h: Harness, channel: string): Promise<string[]> {
  return h.redis.lrange<string>(spoolKey(h, channel), 0, -1)
}

async function dead(h: Harness, channel: string): Promise<string[]> {
  return h.redis.lrange<string>(h.redisKey(`spool-dead:${channel}`), 0, -1)
}

/** The forward body inside a spool entry. */
function eventOf(entry: string | undefined): { deliveryKey: string; payloadHash: string } {
  const envelope = JSON.parse(entry ?? 'null') as { body: string }
  return JSON.parse(envelope.body)
}

describe.each(CASES)('$name with the origin down', ({ channel, delivery, okBody }) => {
  it('answers ok, keeps the event in the spool, marks the claim spooled; a replay is not forwarded', async () => {
    const h = harness()
    const { make, deliveryKey } = delivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })

    const response = await h.deliver(await make())
    expect(response.status).toBe(200)
    expect(await response.text()).toBe(okBody)

    const entries = await spooled(h, channel)
    expect(entries).toHaveLength(1)
    const event = eventOf(entries[0])
    expect(event.deliveryKey).toBe(deliveryKey)
    expect(await h.redisGet(deliveryKey)).toBe(`spooled|${event.payloadHash}`)
    expect(await h.redisTtl(deliveryKey)).toBeGreaterThan(86_000)

    const replay = await h.deliver(await make())
    expect(replay.status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(1)
    expect(await spooled(h, channel)).toHaveLength(1)
  })

  it('the drain after the origin recovers makes exactly one row, removes the entry, claim done', async () => {
    const h = harness()
    const { make, deliveryKey } = delivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    expect((await h.deliver(await make())).status).toBe(200)
    const event = eventOf((await spooled(h, channel))[0])

    await h.setOriginMode({ kind: 'ok' })
    await drain(h.env)

    const { calls, rows } = await h.originCalls()
    expect(calls.map((c) => c.answered)).toEqual([503, 201])
    expect(rows).toBe(1)
    expect(await spooled(h, channel)).toEqual([])
    expect(await h.redisGet(deliveryKey)).toBe(`done|${event.payloadHash}`)
    // Drained and done: a late replay is still not forwarded.
    expect((await h.deliver(await make())).status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(2)
  })
})

describe('the drain', () => {
  it('keeps the entry while the origin is still down', async () => {
    const h = harness()
    const { make, deliveryKey } = slackCase.delivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await h.deliver(await make())
    const before = await spooled(h, 'slack')

    await drain(h.env)

    expect((await h.originCalls()).calls.map((c) => c.answered)).toEqual([503, 503])
    expect(await spooled(h, 'slack')).toEqual(before)
    expect(await h.redisGet(deliveryKey)).toMatch(/^spooled\|/)
    expect((await h.originCalls()).rows).toBe(0)
  })

  it('two drains at once forward each entry once: one row', async () => {
    const h = harness()
    const { make } = slackCase.delivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await h.deliver(await make())
    // Slow enough that the first run still holds the lock when the second starts.
    await h.setOriginMode({ kind: 'delay', ms: 500 })

    await Promise.all([drain(h.env), drain(h.env)])

    const { calls, rows } = await h.originCalls()
    expect(calls.map((c) => c.answered)).toEqual([503, 201])
    expect(rows).toBe(1)
    expect(await spooled(h, 'slack')).toEqual([])
  })

  it('moves an entry the origin refuses for good to the dead list; the claim stays settled', async () => {
    const h = harness()
    const { make, deliveryKey } = slackCase.delivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await h.deliver(await make())
    const entries = await spooled(h, 'slack')
    await h.setOriginMode({ kind: 'reject' })

    await drain(h.env)
    await drain(h.env)

    expect(await spooled(h, 'slack')).toEqual([])
    expect(await dead(h, 'slack')).toEqual(entries)
    // Refused once, not again on the second run: nothing loops.
    expect((await h.originCalls()).calls.map((c) => c.answered)).toEqual([503, 400])
    expect(await h.redisGet(deliveryKey)).toMatch(/^spooled\|/)
    expect((await h.deliver(await make())).status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(2)
  })

  it('moves an unreadable entry to the dead list and drains the next one', async () => {
    const h = harness()
    await h.redis.rpush(spoolKey(h, 'slack'), '{"v":1,"not":"an entry"}')
    const { make } = slackCase.delivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await h.deliver(await make())
    await h.setOriginMode({ kind: 'ok' })

    await drain(h.env)

    expect(await dead(h, 'slack')).toEqual(['{"v":1,"not":"an entry"}'])
    expect(await spooled(h, 'slack')).toEqual([])
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('forwards oldest first: an edit spooled after its message reaches the origin after it', async () => {
    const h = harness()
    const updateId = Math.floor(Math.random() * 2 ** 30)
    const chatId = Math.floor(Math.random() * 2 ** 30)
    const url = `${GATEWAY}/webhooks/telegram`
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await h.deliver(telegramRequest(url, telegramUpdate({ updateId, chatId, messageId: 9 })))
    await h.deliver(
      telegramRequest(
        url,
        telegramUpdate({
          updateId: updateId + 1,
          chatId,
          messageId: 9,
          field: 'edited_message',
          editDate: 1700000500,
        }),
      ),
    )
    expect(await spooled(h, 'telegram')).toHaveLength(2)
    await h.setOriginMode({ kind: 'ok' })

    await drain(h.env)

    const { calls } = await h.originCalls()
    expect(calls.slice(2).map((c) => [c.kind, c.answered])).toEqual([
      ['message', 201],
      ['edit', 200],
    ])
  })

  it('is bounded by SPOOL_DRAIN_MAX_PER_RUN; the next run takes the rest', async () => {
    const h = harness({ SPOOL_DRAIN_MAX_PER_RUN: '2' })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    for (let i = 0; i < 3; i++) await h.deliver(await slackCase.delivery().make())
    await h.setOriginMode({ kind: 'ok' })

    await drain(h.env)
    expect(await spooled(h, 'slack')).toHaveLength(1)
    expect((await h.originCalls()).rows).toBe(2)

    await drain(h.env)
    expect(await spooled(h, 'slack')).toHaveLength(0)
    expect((await h.originCalls()).rows).toBe(3)
  })

  it('a late answer from a slow origin and the drained copy are still one row', async () => {
    const h = harness({ ORIGIN_TIMEOUT_MS: '500' })
    const { make, deliveryKey } = slackCase.delivery()
    // The origin takes the event, but after the gateway gave up waiting: spooled anyway.
    await h.setOriginMode({ kind: 'delay', ms: 1_000 })
    expect((await h.deliver(await make())).status).toBe(200)
    expect(await h.redisGet(deliveryKey)).toMatch(/^spooled\|/)
    await new Promise((r) => setTimeout(r, 1_000))
    await h.setOriginMode({ kind: 'ok' })

    await drain(h.env)

    const { calls, rows } = await h.originCalls()
    expect(calls.map((c) => c.answered)).toEqual([201, 200])
    expect(rows).toBe(1)
    expect(await h.redisGet(deliveryKey)).toMatch(/^done\|/)
  })
})

describe('what cannot be spooled gets the retry answer', () => {
  it('Redis down and the origin down: every channel gets the retry status (503)', async () => {
    const h = harness({ UPSTASH_REDIS_REST_URL: inject('deadRedisUrl') })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    for (const { delivery } of CASES) {
      const response = await h.deliver(await delivery().make())
      expect(response.status).toBe(503)
      expect(response.headers.get('x-slack-no-retry')).toBeNull()
    }
  })

  it('a full spool: 503 and the claim released; the entries already there are kept', async () => {
    const h = harness({ SPOOL_MAX_ENTRIES: '1' })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const first = slackCase.delivery()
    const second = slackCase.delivery()
    expect((await h.deliver(await first.make())).status).toBe(200)
    expect((await h.deliver(await second.make())).status).toBe(503)
    expect(await h.redisGet(second.deliveryKey)).toBeNull()
    expect(eventOf((await spooled(h, 'slack'))[0]).deliveryKey).toBe(first.deliveryKey)
  })

  it('an entry over SPOOL_MAX_ENTRY_BYTES: 503 and the claim released, nothing spooled', async () => {
    const h = harness({ SPOOL_MAX_ENTRY_BYTES: '1024' })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const eventId = `Ev${uniq()}`
    const big = slackMessageEvent({ eventId, ts: `${Date.now() / 1000}`, text: 'x'.repeat(2000) })
    expect((await h.deliver(await slackRequest(`${GATEWAY}/webhooks/slack`, big))).status).toBe(503)
    expect(await h.redisGet(`dedup:slack:A123ABC456:${eventId}`)).toBeNull()
    expect(await spooled(h, 'slack')).toEqual([])
  })

  it('a channel left out of SPOOL_CHANNELS: 503 and the claim released', async () => {
    const h = harness({ SPOOL_CHANNELS: 'whatsapp,sms' })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const { make, deliveryKey } = slackCase.delivery()
    expect((await h.deliver(await make())).status).toBe(503)
    expect(await h.redisGet(deliveryKey)).toBeNull()
    expect(await spooled(h, 'slack')).toEqual([])
  })
})

describe('/healthz', () => {
  it('shows the spool depth by channel', async () => {
    const h = harness()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await h.deliver(await slackCase.delivery().make())
    await h.deliver(await slackCase.delivery().make())
    const response = await h.deliver(new Request(`${GATEWAY}/healthz`))
    expect(await response.json()).toMatchObject({
      spool: { waiting: { slack: 2 }, dead: {}, total: 2, totalDead: 0 },
    })
  })
})
