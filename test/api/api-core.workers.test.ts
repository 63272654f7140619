/**
 * POST /v1/messages through the delivery core (worker/deliver.ts), in workerd against real Redis
 * and the test origin: shed under a slow origin like every channel (one breaker per isolate),
 * its decisions counted by layer for the console (`POST /v1/decisions`), and every answer logged,
 * those the Idempotency-Key middleware gives from Redis too.
 */
import { afterEach, describe, expect, it, vi } from 'vitest'
import { type SignedDelivery, slackDelivery } from '../../local/vendor-deliveries'
import { sha256Hex } from '../../shared/crypto'
import type { Env } from '../../worker/env'
import type { DeadMessage, SpoolMessage } from '../../worker/spool/message'
import { GATEWAY, type Harness, harness } from '../support/workerd/harness'
import { RecordingQueue } from '../support/workerd/queues'

const API_KEY = 'acme-core-key-1'

async function apiHarness(overrides: Partial<Env> = {}, deadQueueDown = false) {
  const spool = new RecordingQueue<SpoolMessage>()
  const dead = new RecordingQueue<DeadMessage>(deadQueueDown)
  const h = harness({
    API_KEYS: JSON.stringify({ [await sha256Hex(API_KEY)]: 'acme' }),
    SPOOL: spool as unknown as Env['SPOOL'],
    SPOOL_DEAD: dead as unknown as Env['SPOOL_DEAD'],
    ...overrides,
  })
  return { h, spool, dead }
}

const freshKey = () => crypto.randomUUID()

/** One API message: its status, the decision header, and how long until it was answered. */
async function post(h: Harness, key: string, text = 'hello') {
  const request = new Request(`${GATEWAY}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${API_KEY}`,
      'idempotency-key': key,
    },
    body: JSON.stringify({ customer: { id: 'cust-1' }, text }),
  })
  const { response, answeredMs } = await h.sendTimed({
    request: async () => request,
  } as unknown as SignedDelivery)
  return {
    status: response.status,
    decision: response.headers.get('x-dedup-decision'),
    ms: answeredMs,
  }
}

describe('the API sheds like every channel', () => {
  it('the breaker open (origin slow): API messages are queued at once, 202, the origin not called', async () => {
    const { h, spool } = await apiHarness({
      SHED_AFTER_FAILURES: '2',
      SHED_SLOW_MS: '300',
      SHED_OPEN_MS: '30000',
    })
    await h.setOriginMode({ kind: 'delay', ms: 700 })
    // Two slow Slack forwards open this isolate's breaker, the one the API's messages pass too.
    for (let i = 0; i < 2; i++) await h.send(slackDelivery())
    const called = (await h.originCalls()).calls.length
    const keys = [freshKey(), freshKey(), freshKey()]
    for (const key of keys) {
      const answer = await post(h, key)
      expect(answer).toMatchObject({ status: 202, decision: 'spooled' })
      // Not waited on: well under the origin's 700 ms (and the origin is not called, below).
      expect(answer.ms).toBeLessThan(600)
    }
    expect((await h.originCalls()).calls).toHaveLength(called)
    const queued = spool.sent.filter((m) => m.event.channel === 'api')
    expect(queued.map((m) => m.claimKey)).toEqual(keys.map((key) => `dedup:api:acme:${key}`))
    // A retry while it is queued is queued again (202 is no stored answer), still not waited on.
    expect(await post(h, keys[0] as string)).toMatchObject({ status: 202, decision: 'spooled' })
  })

  it('a slow forward is waited for SHED_SLOW_MS, then queued (202); the retry replays its answer', async () => {
    const { h } = await apiHarness({ SHED_SLOW_MS: '300' })
    await h.setOriginMode({ kind: 'delay', ms: 700 })
    const key = freshKey()
    const slow = await post(h, key)
    expect(slow).toMatchObject({ status: 202, decision: 'spooled' })
    expect(slow.ms).toBeGreaterThanOrEqual(300)
    expect(slow.ms).toBeLessThan(650)
    // The abandoned forward landed in the background (waited out by the harness): its answer.
    await h.setOriginMode({ kind: 'ok' })
    expect(await post(h, key)).toMatchObject({ status: 201, decision: 'duplicate' })
    expect((await h.originCalls()).rows).toBe(1)
  })
})

describe('a message the origin refuses', () => {
  it("400 invalid_request, kept as a dead letter like any channel's; not stored: the retry runs again", async () => {
    const { h, dead } = await apiHarness()
    await h.setOriginMode({ kind: 'reject' })
    const key = freshKey()
    expect(await post(h, key)).toMatchObject({ status: 400, decision: 'rejected' })
    expect(dead.sent.map((m) => m.claimKey)).toEqual([`dedup:api:acme:${key}`])
    await h.setOriginMode({ kind: 'ok' })
    expect(await post(h, key)).toMatchObject({ status: 201, decision: 'forwarded' })
  })

  it('its dead letter not sent: still 400 (the client fixes it; a 503 would have it retry for ever)', async () => {
    const { h } = await apiHarness({}, true)
    await h.setOriginMode({ kind: 'reject' })
    expect(await post(h, freshKey())).toMatchObject({ status: 400, decision: 'retry' })
  })
})

describe('the API counted and logged like every channel', () => {
  afterEach(() => vi.restoreAllMocks())

  it('its decisions reach the console by layer: forwarded, duplicate (redis, postgres), spooled', async () => {
    const { h } = await apiHarness({ DECISION_FLUSH_SECONDS: '1', SHED_SLOW_MS: '300' })
    const key = freshKey()
    expect((await post(h, key)).status).toBe(201)
    // Replayed from Redis by the middleware, and another request under the key (422).
    expect((await post(h, key)).status).toBe(201)
    expect((await post(h, key, 'other')).status).toBe(422)
    // The stored answer gone from Redis: the origin (Postgres) replays it.
    await h.redis.del(...(await h.redis.keys(`${h.redisKey('idem:')}*`)))
    expect((await post(h, key)).status).toBe(201)
    // Slow: queued after SHED_SLOW_MS (an origin that refused would refuse the counts' flush too).
    await h.setOriginMode({ kind: 'delay', ms: 700 })
    expect((await post(h, freshKey())).status).toBe(202)

    const rows = (await h.originCalls()).decisions.filter((row) => row.channel === 'api')
    const counts = new Map<string, number>()
    for (const row of rows) {
      const label = `${row.decision}/${row.decidedBy}/${row.reason}`
      counts.set(label, (counts.get(label) ?? 0) + row.count)
    }
    expect(Object.fromEntries(counts)).toEqual({
      'forwarded/redis/': 1,
      'duplicate/redis/': 1,
      'duplicate/redis/payload_mismatch': 1,
      'duplicate/postgres/': 1,
      'spooled/gateway/shed_slow': 1,
    })
  })

  it('a replay answered from Redis and a 422 are logged as decisions of channel api', async () => {
    const { h } = await apiHarness()
    const key = freshKey()
    await post(h, key)
    const log = vi.spyOn(console, 'log')
    await post(h, key)
    await post(h, key, 'other')
    const lines = log.mock.calls
      .map(([line]) => JSON.parse(String(line)) as Record<string, unknown>)
      .filter((line) => line.msg === 'decision')
    expect(lines).toMatchObject([
      {
        channel: 'api',
        deliveryKey: `api:acme:${key}`,
        decision: 'duplicate',
        decidedBy: 'redis',
        status: 201,
      },
      { channel: 'api', decision: 'duplicate', payloadMismatch: true, status: 422 },
    ])
    expect(lines[0]).not.toHaveProperty('answer')
  })
})
