/**
 * The claim protocol in workerd against real Redis (through the Upstash stand-in) and a real HTTP
 * origin: replays, concurrency, origin failures, Redis outages and slowness, key namespaces.
 */
import { describe, expect, inject, it } from 'vitest'
import { settledValue } from '../../claims'
import {
  randomHex,
  randomId,
  type SignedDelivery,
  slackDelivery,
  slackRequest,
  TEST_SECRETS,
  telegramDelivery,
  twilioDelivery,
  twilioDeliveryKey,
} from '../../local/vendor-deliveries'
import { DONE_VALUE } from '../support/claim-values'
import { GATEWAY, type Harness, harness } from '../support/workerd/harness'

interface ChannelCase {
  name: string
  /** A fresh delivery; each `request()` of it is the same delivery again (a vendor replay). */
  delivery(): SignedDelivery
}

const CHANNELS: ChannelCase[] = [
  { name: 'slack', delivery: () => slackDelivery() },
  { name: 'twilio (whatsapp)', delivery: () => twilioDelivery() },
  { name: 'telegram', delivery: () => telegramDelivery() },
]

async function statuses(h: Harness, requests: Array<Promise<Request>>): Promise<number[]> {
  return Promise.all(requests.map(async (r) => (await h.deliver(await r)).status))
}

describe.each(CHANNELS)('$name', ({ delivery }) => {
  it('the same delivery 8 times: origin called once, every answer 200, key done', async () => {
    const h = harness()
    const d = delivery()
    const answers: number[] = []
    for (let i = 0; i < 8; i++) answers.push((await h.send(d)).status)
    expect(answers).toEqual(Array(8).fill(200))
    const { calls } = await h.originCalls()
    expect(calls).toHaveLength(1)
    expect(await h.redisGet(d.deliveryKey)).toBe(settledValue('done', calls[0]?.payloadHash ?? ''))
    expect(await h.redisTtl(d.deliveryKey)).toBeGreaterThan(86_000)
  })

  it('30 concurrent copies: origin called once, every answer 200', async () => {
    const h = harness()
    const d = delivery()
    const answers = await statuses(
      h,
      Array.from({ length: 30 }, () => d.request(GATEWAY)),
    )
    expect(answers).toEqual(Array(30).fill(200))
    expect((await h.originCalls()).calls).toHaveLength(1)
  })

  it('origin failing: claim released, vendor told to retry; the retry after recovery forwards', async () => {
    // The path without the spool (test/spool/spool.workers.test.ts has the spooled one).
    const h = harness({ SPOOL_CHANNELS: 'none' })
    const d = delivery()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const failed = await h.send(d)
    expect(failed.status).toBe(503)
    expect(failed.headers.get('x-slack-no-retry')).toBeNull()
    expect(await h.redisGet(d.deliveryKey)).toBeNull()

    await h.setOriginMode({ kind: 'ok' })
    expect((await h.send(d)).status).toBe(200)
    const { calls } = await h.originCalls()
    expect(calls.map((c) => c.answered)).toEqual([503, 201])
    expect(await h.redisGet(d.deliveryKey)).toMatch(DONE_VALUE)
  })

  it('Redis unreachable: every copy still forwarded (fail open); the origin decides', async () => {
    const h = harness({ UPSTASH_REDIS_REST_URL: inject('deadRedisUrl') })
    const d = delivery()
    const answers = [await h.send(d), await h.send(d), await h.send(d)]
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200])
    const { calls, rows } = await h.originCalls()
    expect(calls.map((c) => c.answered)).toEqual([201, 200, 200])
    expect(rows).toBe(1)
  })
})

describe('Redis slower than its budget', () => {
  it('fails open and still answers Slack inside its 3 s deadline', async () => {
    const h = harness({ UPSTASH_REDIS_REST_URL: inject('slowRedisUrl') })
    const d = CHANNELS[0]?.delivery() ?? ({} as never)
    const started = Date.now()
    const response = await h.send(d)
    // Measured before waitUntil work (the best-effort complete) is awaited by deliver().
    const answeredIn = Date.now() - started
    expect(response.status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(1)
    // A correctness bound, not a speed target: the stand-in takes 4 s, Slack gives up at 3 s.
    expect(answeredIn).toBeLessThan(3_000)
  })
})

describe('in flight', () => {
  it('a replay while the first attempt is still forwarding waits briefly, then asks to retry', async () => {
    // Shedding off: with it on, a forward is waited for at most SHED_SLOW_MS and then queued.
    const h = harness({
      ORIGIN_TIMEOUT_MS: '2000',
      INFLIGHT_WAIT_MS: '300',
      SHED_AFTER_FAILURES: '0',
    })
    const d = CHANNELS[0]?.delivery() ?? ({} as never)
    await h.setOriginMode({ kind: 'delay', ms: 1_200 })
    const first = h.send(d)
    await new Promise((r) => setTimeout(r, 150))
    const replay = await h.send(d)
    expect(replay.status).toBe(503)
    expect((await first).status).toBe(200)
    await h.setOriginMode({ kind: 'ok' })
    expect((await h.send(d)).status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(1)
    expect(await h.redisGet(d.deliveryKey)).toMatch(DONE_VALUE)
  })

  it('a replay takes over when the first attempt fails and releases, and forwards itself', async () => {
    const h = harness({ INFLIGHT_WAIT_MS: '1500', SPOOL_CHANNELS: 'none' })
    const d = CHANNELS[1]?.delivery() ?? ({} as never)
    await h.setOriginMode({ kind: 'fail', status: 500, delayMs: 400 })
    const first = h.send(d)
    await new Promise((r) => setTimeout(r, 100))
    await h.setOriginMode({ kind: 'ok' })
    const replay = await h.send(d)
    expect((await first).status).toBe(503)
    expect(replay.status).toBe(200)
    expect((await h.originCalls()).calls.map((c) => c.answered)).toEqual([500, 201])
    expect(await h.redisGet(d.deliveryKey)).toMatch(DONE_VALUE)
  })

  it('an origin slower than its timeout: released within Slack budget, retryable answer', async () => {
    const h = harness({ ORIGIN_TIMEOUT_MS: '500', SPOOL_CHANNELS: 'none' })
    const d = CHANNELS[0]?.delivery() ?? ({} as never)
    await h.setOriginMode({ kind: 'delay', ms: 2_000 })
    const response = await h.send(d)
    expect(response.status).toBe(503)
    expect(await h.redisGet(d.deliveryKey)).toBeNull()
  })
})

describe('origin refuses the event itself', () => {
  it('acknowledges the vendor (no retry loop), releases the claim, logs the rejection', async () => {
    const h = harness()
    const d = CHANNELS[2]?.delivery() ?? ({} as never)
    await h.setOriginMode({ kind: 'reject' })
    expect((await h.send(d)).status).toBe(200)
    expect(await h.redisGet(d.deliveryKey)).toBeNull()
  })

  it('treats a 401 from the origin (our secret is wrong) as retryable, not as a bad event', async () => {
    const h = harness({ ORIGIN_SHARED_SECRET: 'not-the-origins-secret', SPOOL_CHANNELS: 'none' })
    const d = CHANNELS[2]?.delivery() ?? ({} as never)
    expect((await h.send(d)).status).toBe(503)
    expect(await h.redisGet(d.deliveryKey)).toBeNull()
  })
})

describe('payload mismatch', () => {
  it('a replay with another payload under the same key: 200, not forwarded, counted', async () => {
    const h = harness()
    const eventId = `Ev${randomId()}`
    for (const text of ['one', 'two']) {
      expect((await h.send(slackDelivery({ eventId, text }))).status).toBe(200)
    }
    expect((await h.originCalls()).calls).toHaveLength(1)
    expect(await h.redis.hget(h.redisKey('dedup:stats'), 'payload_mismatch:slack')).toBe('1')
  })
})

describe('Twilio status callbacks', () => {
  it('are recorded under their own namespace, never forwarded, never colliding with the message', async () => {
    const h = harness()
    const messageSid = `SM${randomHex(16)}`
    const inbound = twilioDelivery({ messageSid })
    expect((await h.send(inbound)).status).toBe(200)
    const callbacks = [
      twilioDelivery({ messageSid, status: 'sent' }),
      twilioDelivery({ messageSid, status: 'delivered' }),
      twilioDelivery({ messageSid, status: 'delivered' }),
      twilioDelivery({ messageSid, status: 'undelivered', errorCode: '30003' }),
    ]
    for (const callback of callbacks) {
      const answer = await h.send(callback)
      expect(answer.status).toBe(200)
      expect(await answer.text()).toContain('<Response/>')
    }
    // The message's key, and each status callback's in its own namespace.
    const message = twilioDeliveryKey('wa', messageSid)
    expect((await h.originCalls()).calls.map((c) => c.deliveryKey)).toEqual([message])
    expect(await h.redisGet(message)).toMatch(DONE_VALUE)
    for (const status of [['sent'], ['delivered'], ['undelivered', '30003']]) {
      const key = twilioDeliveryKey('tw-status', messageSid, ...status)
      expect(await h.redisGet(key)).toMatch(DONE_VALUE)
    }
  })

  it('a status callback first does not block the inbound message with the same sid', async () => {
    const h = harness()
    const messageSid = `SM${randomHex(16)}`
    await h.send(twilioDelivery({ messageSid, status: 'received' }))
    expect((await h.send(twilioDelivery({ messageSid }))).status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(1)
  })
})

describe('Telegram', () => {
  it('message 42 in two chats: two forwards, two rows', async () => {
    const h = harness()
    const chats = [1001, 2002].map((chatId) => telegramDelivery({ chatId, messageId: 42 }))
    for (const chat of chats) expect((await h.send(chat)).status).toBe(200)
    const { calls, rows } = await h.originCalls()
    const bot = TEST_SECRETS.telegramBotId
    expect(calls.map((c) => c.messageKey)).toEqual([`${bot}:1001:42`, `${bot}:2002:42`])
    expect(rows).toBe(2)
  })

  it('an edit forwards as kind edit under the same message key', async () => {
    const h = harness()
    const message = { chatId: 5, messageId: 9 }
    const edit = { ...message, field: 'edited_message', editDate: 1700000500 } as const
    await h.send(telegramDelivery(message))
    await h.send(telegramDelivery(edit))
    expect((await h.originCalls()).calls.map((c) => [c.kind, c.messageKey])).toEqual([
      ['message', `${TEST_SECRETS.telegramBotId}:5:9`],
      ['edit', `${TEST_SECRETS.telegramBotId}:5:9`],
    ])
  })
})

describe('Slack', () => {
  it('a fresh event_id for the same message is forwarded (Postgres, not Redis, catches it)', async () => {
    const h = harness()
    const ts = `${Date.now() / 1000}`
    for (const delivery of [slackDelivery({ ts }), slackDelivery({ ts })]) {
      expect((await h.send(delivery)).status).toBe(200)
    }
    const { calls, rows } = await h.originCalls()
    expect(calls.map((c) => c.answered)).toEqual([201, 200])
    expect(rows).toBe(1)
  })

  it("records an interaction of the app's own UI (a shortcut) under its trigger_id and acknowledges it", async () => {
    const h = harness()
    const triggerId = `398738663015.${randomId()}`
    const payload = {
      type: 'shortcut',
      api_app_id: 'A1',
      trigger_id: triggerId,
      user: { id: 'U1' },
    }
    const body = `payload=${encodeURIComponent(JSON.stringify(payload))}`
    const request = () =>
      slackRequest(`${GATEWAY}/webhooks/slack`, body, {
        contentType: 'application/x-www-form-urlencoded',
      })
    expect((await h.deliver(await request())).status).toBe(200)
    expect((await h.deliver(await request())).status).toBe(200)
    expect(await h.redisGet(`dedup:slack-interaction:A1:${triggerId}`)).toMatch(DONE_VALUE)
    expect((await h.originCalls()).calls).toHaveLength(0)
  })
})
