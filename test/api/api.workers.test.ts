/**
 * POST /v1/messages in workerd: the real Worker, real Redis (through the Upstash stand-in), the
 * test origin (which stores answers per Idempotency-Key as origin/idempotency.ts does; the real
 * origin and Postgres are test/api/api.e2e.test.ts). The draft's cases (missing, malformed, replay,
 * in flight, mismatch), 50 at once with one key, two tenants, Redis down, origin down, expiry,
 * CORS, and the key's two spellings.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test'
import { describe, expect, inject, it } from 'vitest'
import { PROBLEM_CONTENT_TYPE, problemType } from '../../contract/problem'
import { sha256Hex } from '../../shared/crypto'
import type { Env } from '../../worker/env'
import worker from '../../worker/index'
import type { SpoolMessage } from '../../worker/spool/message'
import { GATEWAY, type Harness, harness } from '../support/workerd/harness'
import { RecordingQueue } from '../support/workerd/queues'

const MESSAGES = `${GATEWAY}/v1/messages`
const KEYS = { acme: 'acme-test-key-1', globex: 'globex-test-key-1' }
const APP = 'https://app.acme.example'

async function apiEnv(overrides: Partial<Env> = {}): Promise<Partial<Env>> {
  return {
    API_KEYS: JSON.stringify({
      [await sha256Hex(KEYS.acme)]: 'acme',
      [await sha256Hex(KEYS.globex)]: 'globex',
    }),
    API_ALLOWED_ORIGINS: `acme=${APP},globex=https://chat.globex.example`,
    ...overrides,
  }
}

async function apiHarness(overrides: Partial<Env> = {}): Promise<Harness> {
  return harness(await apiEnv(overrides))
}

const freshKey = () => `"${crypto.randomUUID()}"`

interface PostOptions {
  key?: string | null
  apiKey?: string
  body?: unknown
  origin?: string
}

function post(h: Harness, options: PostOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (options.key !== null) headers['idempotency-key'] = options.key ?? freshKey()
  headers.authorization = `Bearer ${options.apiKey ?? KEYS.acme}`
  if (options.origin) headers.origin = options.origin
  const body = options.body ?? { customer: { id: 'cust-1', name: 'Ada' }, text: 'hello' }
  return h.deliver(new Request(MESSAGES, { method: 'POST', headers, body: JSON.stringify(body) }))
}

async function expectProblem(response: Response, status: number, code: string): Promise<void> {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toBe(PROBLEM_CONTENT_TYPE)
  const body = (await response.json()) as { type: string; status: number; code: string }
  expect(body).toMatchObject({ type: problemType(code as never), status, code })
}

async function forwards(h: Harness): Promise<number> {
  return (await h.originCalls()).calls.filter((call) => call.channel === 'api').length
}

describe('POST /v1/messages: the Idempotency-Key draft', () => {
  it('a new key: 201 with the ids; the same request again: the same answer, replayed, nothing sent', async () => {
    const h = await apiHarness()
    const key = freshKey()
    const first = await post(h, { key })
    expect(first.status).toBe(201)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    const body = await first.json()
    expect(body).toMatchObject({ status: 'created', id: expect.any(String) })
    const again = await post(h, { key })
    expect(again.status).toBe(201)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await again.json()).toEqual(body)
    expect(await forwards(h)).toBe(1)
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('the key as a Structured Field string and as a bare token is one key', async () => {
    const h = await apiHarness()
    const id = crypto.randomUUID()
    expect((await post(h, { key: `"${id}"` })).status).toBe(201)
    const bare = await post(h, { key: id })
    expect(bare.status).toBe(201)
    expect(bare.headers.get('idempotent-replayed')).toBe('true')
  })

  it('missing: 400 idempotency-key-missing, nothing sent', async () => {
    const h = await apiHarness()
    await expectProblem(await post(h, { key: null }), 400, 'idempotency_key_missing')
    expect(await forwards(h)).toBe(0)
  })

  it.each([
    ['an unterminated string', '"abc'],
    ['two field lines', '"a", "b"'],
    ['a string with parameters', '"abc";v=1'],
    ['an empty string', '""'],
    ['256 characters', `"${'a'.repeat(256)}"`],
    ['a bare value with a quote', 'ab"c'],
    ['a bare value with a space', 'a b'],
  ])('malformed (%s): 400 idempotency-key-malformed, nothing sent', async (_, key) => {
    const h = await apiHarness()
    await expectProblem(await post(h, { key }), 400, 'idempotency_key_malformed')
    expect(await forwards(h)).toBe(0)
  })

  it('255 characters are a key', async () => {
    const h = await apiHarness()
    expect(
      (await post(h, { key: `"${'k'.repeat(250)}${crypto.randomUUID().slice(0, 5)}"` })).status,
    ).toBe(201)
  })

  it('the same key with another body: 422, nothing written; the first answer still replays', async () => {
    const h = await apiHarness()
    const key = freshKey()
    expect((await post(h, { key })).status).toBe(201)
    const other = { customer: { id: 'cust-1' }, text: 'something else' }
    await expectProblem(await post(h, { key, body: other }), 422, 'idempotency_key_reused')
    expect(await forwards(h)).toBe(1)
    expect((await post(h, { key })).headers.get('idempotent-replayed')).toBe('true')
  })

  it('the same body with keys in another order is the same request', async () => {
    const h = await apiHarness()
    const key = freshKey()
    const body = { text: 'hi', customer: { name: 'Ada', id: 'c-9' } }
    expect((await post(h, { key, body })).status).toBe(201)
    const reordered = { customer: { id: 'c-9', name: 'Ada' }, text: 'hi' }
    expect((await post(h, { key, body: reordered })).headers.get('idempotent-replayed')).toBe(
      'true',
    )
  })

  it('a repeat while the first still runs: 409 with Retry-After; after it, the stored answer', async () => {
    // Shedding off: the slow first request is waited for, not queued (api-core.workers.test.ts sheds).
    const h = await apiHarness({ SHED_AFTER_FAILURES: '0' })
    await h.setOriginMode({ kind: 'delay', ms: 1_200 })
    const key = freshKey()
    const first = post(h, { key })
    await new Promise((r) => setTimeout(r, 300))
    const second = await post(h, { key })
    await expectProblem(second, 409, 'idempotency_key_in_use')
    expect(second.headers.get('retry-after')).toBe('1')
    expect((await first).status).toBe(201)
    expect((await post(h, { key })).headers.get('idempotent-replayed')).toBe('true')
    expect(await forwards(h)).toBe(1)
  })

  it('50 at once with one key: one row, one stored answer, every other answer 409 or the replay', async () => {
    const h = await apiHarness()
    await h.setOriginMode({ kind: 'delay', ms: 200 })
    const key = freshKey()
    const answers = await Promise.all(Array.from({ length: 50 }, () => post(h, { key })))
    const statuses = answers.map((r) => r.status)
    expect(statuses.filter((s) => s === 201).length).toBeGreaterThanOrEqual(1)
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true)
    const created = answers.filter((r) => r.status === 201)
    const bodies = new Set(await Promise.all(created.map((r) => r.text())))
    expect(bodies.size).toBe(1)
    expect(created.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1)
    expect((await h.originCalls()).rows).toBe(1)
    expect(await forwards(h)).toBe(1)
    expect(await h.redis.keys(`${h.redisKey('idem:')}*:answer`)).toHaveLength(1)
  })

  it('one key from two tenants is two requests: two rows', async () => {
    const h = await apiHarness()
    const key = freshKey()
    const acme = await post(h, { key })
    const globex = await post(h, { key, apiKey: KEYS.globex })
    expect([acme.status, globex.status]).toEqual([201, 201])
    expect(globex.headers.get('idempotent-replayed')).toBeNull()
    expect((await h.originCalls()).rows).toBe(2)
  })

  it('a 5xx is not stored: the retry with the same key runs again and lands', async () => {
    const h = await apiHarness({ SPOOL_CHANNELS: 'none' })
    await h.setOriginMode({ kind: 'fail', status: 500 })
    const key = freshKey()
    const failed = await post(h, { key })
    await expectProblem(failed, 503, 'unavailable')
    expect(failed.headers.get('retry-after')).toBe('5')
    await h.setOriginMode({ kind: 'ok' })
    const retry = await post(h, { key })
    expect(retry.status).toBe(201)
    expect(retry.headers.get('idempotent-replayed')).toBeNull()
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('an invalid body: 400, not stored (a corrected request with the same key runs)', async () => {
    const h = await apiHarness()
    const key = freshKey()
    await expectProblem(
      await post(h, { key, body: { customer: { id: 'c' } } }),
      400,
      'invalid_request',
    )
    expect(await forwards(h)).toBe(0)
    expect((await post(h, { key })).status).toBe(201)
  })

  it('the stored answer expired in Redis: the origin (Postgres) still answers it, one row', async () => {
    const h = await apiHarness()
    const key = freshKey()
    const first = await post(h, { key })
    const body = await first.json()
    const keys = await h.redis.keys(`${h.redisKey('idem:')}*`)
    expect(keys).toHaveLength(2)
    await h.redis.del(...keys)
    const again = await post(h, { key })
    expect(again.status).toBe(201)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await again.json()).toEqual(body)
    expect((await h.originCalls()).rows).toBe(1)
    // And the mismatch is seen by the durable layer too.
    const other = { customer: { id: 'cust-1' }, text: 'other' }
    await h.redis.del(...(await h.redis.keys(`${h.redisKey('idem:')}*`)))
    await expectProblem(await post(h, { key, body: other }), 422, 'idempotency_key_reused')
  })

  it('Redis down: Postgres decides alone (replay and mismatch)', async () => {
    const h = await apiHarness({ UPSTASH_REDIS_REST_URL: inject('deadRedisUrl') })
    const key = freshKey()
    const first = await post(h, { key })
    expect(first.status).toBe(201)
    const again = await post(h, { key })
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await again.json()).toEqual(await first.json())
    const other = { customer: { id: 'cust-1' }, text: 'other' }
    await expectProblem(await post(h, { key, body: other }), 422, 'idempotency_key_reused')
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('origin down: 202 queued (not stored); it lands once; the retry then gets the stored answer', async () => {
    const spool = new RecordingQueue<SpoolMessage>()
    const h = await apiHarness({ SPOOL: spool as unknown as Env['SPOOL'] })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const key = freshKey()
    const queued = await post(h, { key })
    expect(queued.status).toBe(202)
    expect(await queued.json()).toEqual({ status: 'queued' })
    // Still down: the retry is queued again, never a second row (the message key is the key's).
    expect((await post(h, { key })).status).toBe(202)
    await h.setOriginMode({ kind: 'ok' })
    const batch = createMessageBatch(
      'inbound-dedup-spool',
      spool.sent.map((body, i) => ({ id: `m${i}`, timestamp: new Date(), attempts: 1, body })),
    )
    const ctx = createExecutionContext()
    await worker.queue(batch, h.env, ctx)
    expect((await getQueueResult(batch, ctx)).explicitAcks).toHaveLength(2)
    // Counted queued and landed like every front door's events: the spool's backlog is back to 0.
    const flat = (await h.redis.hgetall(h.redisKey('dedup:stats'))) as unknown as string[]
    const stats = Object.fromEntries(flat.flatMap((v, i) => (i % 2 ? [] : [[v, flat[i + 1]]])))
    expect([stats['spool_queued:api'], stats['spool_delivered:api']]).toEqual(['2', '2'])
    const retry = await post(h, { key })
    expect(retry.status).toBe(201)
    expect(retry.headers.get('idempotent-replayed')).toBe('true')
    expect((await h.originCalls()).rows).toBe(1)
  })
})

describe('POST /v1/messages: keys and origins', () => {
  it.each([
    ['no key', undefined],
    ['an unknown key', 'Bearer not-a-key'],
    ['another scheme', `Basic ${btoa('acme:x')}`],
  ])('%s: 401, nothing claimed or sent', async (_, authorization) => {
    const h = await apiHarness()
    const headers: Record<string, string> = { 'idempotency-key': freshKey() }
    if (authorization) headers.authorization = authorization
    const response = await h.deliver(
      new Request(MESSAGES, {
        method: 'POST',
        headers,
        body: '{"customer":{"id":"c"},"text":"x"}',
      }),
    )
    await expectProblem(response, 401, 'unauthorized')
    expect(await forwards(h)).toBe(0)
    expect(await h.redis.keys(`${h.redisKey('idem:')}*`)).toEqual([])
  })

  it('no API_KEYS: 401', async () => {
    const h = harness({})
    await expectProblem(await post(h), 401, 'unauthorized')
  })

  it('CORS preflight from an allowed origin: 204, Idempotency-Key allowed', async () => {
    const h = await apiHarness()
    const response = await h.deliver(
      new Request(MESSAGES, {
        method: 'OPTIONS',
        headers: {
          origin: APP,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type, idempotency-key',
        },
      }),
    )
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe(APP)
    expect(response.headers.get('access-control-allow-headers')).toMatch(/Idempotency-Key/)
    expect(response.headers.get('access-control-allow-methods')).toBe('POST')
  })

  it('CORS preflight from an origin no tenant lists: 403, no CORS headers', async () => {
    const h = await apiHarness()
    const response = await h.deliver(
      new Request(MESSAGES, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } }),
    )
    expect(response.status).toBe(403)
    expect(response.headers.get('access-control-allow-origin')).toBeNull()
  })

  it('a browser answer exposes Idempotent-Replayed and Retry-After', async () => {
    const h = await apiHarness()
    const key = freshKey()
    await post(h, { key, origin: APP })
    const replayed = await post(h, { key, origin: APP })
    expect(replayed.headers.get('idempotent-replayed')).toBe('true')
    expect(replayed.headers.get('access-control-allow-origin')).toBe(APP)
    expect(replayed.headers.get('access-control-expose-headers')).toMatch(
      /Idempotent-Replayed.*Retry-After/,
    )
  })

  it("a POST from another tenant's origin: 403, nothing sent", async () => {
    const h = await apiHarness()
    const response = await post(h, { origin: 'https://chat.globex.example' })
    await expectProblem(response, 403, 'origin_not_allowed')
    expect(await forwards(h)).toBe(0)
  })

  it('GET /v1/openapi.json: the OpenAPI 3.1 document', async () => {
    const h = await apiHarness()
    const response = await h.deliver(new Request(`${GATEWAY}/v1/openapi.json`))
    expect(response.status).toBe(200)
    const doc = (await response.json()) as { openapi: string; paths: Record<string, unknown> }
    expect(doc.openapi).toBe('3.1.0')
    expect(Object.keys(doc.paths)).toEqual(['/v1/messages'])
  })
})
