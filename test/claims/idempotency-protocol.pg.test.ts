/**
 * Idempotency-Key's protocol alone (claims/idempotency.ts), no HTTP: a route that answers plain
 * objects, run through `runIdempotent` against real Redis (behind the Upstash stand-in) and the
 * origin's `idempotency_keys` rows in real Postgres. What is stored, what a retry gets, who
 * decided it; the HTTP wording of each outcome is idempotency-http/'s (test/workers/api.test.ts,
 * origin-failure-replay-api.test.ts).
 */
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CLAIM_DEFAULTS,
  type ClaimStore,
  claimStore,
  type DurableAnswers,
  type IdempotentCall,
  type IdempotentRoute,
  requestFingerprint,
  runIdempotent,
} from '../../claims'
import { startRedisLayer } from '../../local/redis-layer'
import { REDIS_URL, scratch } from '../../local/services'
import type { Database } from '../../origin/db'
import { durableAnswers } from '../../origin/idempotency'
import { sha256Hex } from '../../shared/crypto'
import { fileTestbed } from '../support/for-file'
import { openTestDb } from '../support/origin'

const tb = fileTestbed()
const run = scratch('idempotency-protocol')
let layer: Awaited<ReturnType<typeof startRedisLayer>>
let db: Database
let store: ClaimStore
let durable: DurableAnswers
/** Redis itself, behind the stand-in: to lose a stored answer as an eviction would. */
const redis = new Redis(REDIS_URL, { lazyConnect: true })

beforeAll(async () => {
  layer = await startRedisLayer({ redisUrl: REDIS_URL, token: 'idempotency-protocol-token' })
  const rest = { url: layer.url, token: 'idempotency-protocol-token' }
  store = claimStore({
    ...CLAIM_DEFAULTS,
    redis: rest,
    redisKeyPrefix: run.keyPrefix,
  }) as ClaimStore
  db = openTestDb(tb.databaseUrl)
  durable = durableAnswers(db)
})
afterAll(async () => {
  await db?.close()
  await layer?.stop()
  redis.disconnect()
  await run.remove()
})

interface Answer {
  status: number
  body: unknown
  replayed?: boolean
}

async function callFor(key: string, body = '{"text":"hi"}'): Promise<IdempotentCall> {
  return {
    tenant: 'acme',
    route: 'POST /v1/test',
    key,
    keyHash: await sha256Hex(key),
    fingerprint: await requestFingerprint('POST', '/v1/test', body),
    ttlSeconds: 60,
    body,
  }
}

/** A route answering `answers` in turn (the last one again), counting its runs. */
function routeOf(...answers: Array<Answer | (() => Promise<Answer>)>) {
  const counted = { runs: 0 }
  const route: IdempotentRoute<Answer> = {
    async run() {
      const next = answers[Math.min(counted.runs, answers.length - 1)] as
        | Answer
        | (() => Promise<Answer>)
      counted.runs += 1
      return typeof next === 'function' ? next() : next
    },
    status: (answer) => answer.status,
    replayed: (answer) => answer.replayed === true,
    body: async (answer) => answer.body,
  }
  return Object.assign(counted, { route })
}

const created = { status: 201, body: { id: 'm1', status: 'created' } }
const key = () => `key-${crypto.randomUUID()}`

describe('runIdempotent', () => {
  it('a final 2xx runs once: the retry gets it from Redis, the route not run again', async () => {
    const call = await callFor(key())
    const first = routeOf(created)
    expect(await runIdempotent(call, store, durable, first.route)).toEqual({
      kind: 'ran',
      result: created,
    })
    const again = routeOf(created)
    const outcome = await runIdempotent(call, store, durable, again.route)
    expect(outcome).toMatchObject({ kind: 'replayed', from: 'redis', answer: created })
    expect(again.runs).toBe(0)
  })

  it('another request under the key is reused (Redis, then Postgres with Redis gone)', async () => {
    const k = key()
    await runIdempotent(await callFor(k), store, durable, routeOf(created).route)
    const other = await callFor(k, '{"text":"other"}')
    const route = routeOf(created)
    expect(await runIdempotent(other, store, durable, route.route)).toEqual({
      kind: 'reused',
      from: 'redis',
    })
    expect(await runIdempotent(other, null, durable, route.route)).toEqual({
      kind: 'reused',
      from: 'postgres',
    })
    expect(route.runs).toBe(0)
  })

  it('a repeat while the first runs is in_use; the first still ends stored', async () => {
    const call = await callFor(key())
    let finish: (answer: Answer) => void = () => {}
    const slow = routeOf(() => new Promise<Answer>((resolve) => (finish = resolve)))
    const first = runIdempotent(call, store, durable, slow.route)
    await expect.poll(() => slow.runs).toBe(1)
    const repeat = routeOf(created)
    expect(await runIdempotent(call, store, durable, repeat.route)).toEqual({
      kind: 'in_use',
      from: 'redis',
    })
    finish(created)
    expect(await first).toEqual({ kind: 'ran', result: created })
    expect(repeat.runs).toBe(0)
  })

  it('a 202 is no answer: the retry runs again, and once it lands its answer is replayed', async () => {
    const call = await callFor(key())
    const route = routeOf({ status: 202, body: { status: 'queued' } }, created)
    await runIdempotent(call, store, durable, route.route)
    expect(await runIdempotent(call, store, durable, route.route)).toEqual({
      kind: 'ran',
      result: created,
    })
    expect(await runIdempotent(call, store, durable, route.route)).toMatchObject({
      kind: 'replayed',
      from: 'redis',
    })
    expect(route.runs).toBe(2)
  })

  it('a 4xx, a 5xx or a throw is not stored: each retry runs again', async () => {
    const call = await callFor(key())
    const route = routeOf(
      { status: 400, body: {} },
      { status: 503, body: {} },
      async () => {
        throw new Error('route failed')
      },
      created,
    )
    await runIdempotent(call, store, durable, route.route)
    await runIdempotent(call, store, durable, route.route)
    await expect(runIdempotent(call, store, durable, route.route)).rejects.toThrow('route failed')
    expect(await runIdempotent(call, store, durable, route.route)).toEqual({
      kind: 'ran',
      result: created,
    })
    expect(route.runs).toBe(4)
    expect(await durable.find(call)).toMatchObject({ status: 201, body: created.body })
  })

  it('the Redis answer gone, or no Redis: Postgres replays it, the route not run', async () => {
    const call = await callFor(key())
    await runIdempotent(call, store, durable, routeOf(created).route)
    const answers = await redis.keys(`${run.keyPrefix}idem:*:answer`)
    expect(answers.length).toBeGreaterThan(0)
    await redis.del(...answers)
    const route = routeOf(created)
    expect(await runIdempotent(call, store, durable, route.route)).toMatchObject({
      kind: 'replayed',
      from: 'postgres',
      answer: created,
    })
    expect(await runIdempotent(call, null, durable, route.route)).toMatchObject({
      kind: 'replayed',
      from: 'postgres',
    })
    expect(route.runs).toBe(0)
  })
})
