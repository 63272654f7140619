/**
 * A dead letter replayed by an operator settles its Redis claim: the queue left it `spooled`, the
 * replay stores the event and the claim says `done`, with the time it had left (a vendor's copy
 * after that is a duplicate at Redis). Real Postgres, real Redis behind the Upstash stand-in.
 */
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  CLAIM_DEFAULTS,
  type ClaimStore,
  claimStore,
  inflightValue,
  settledValue,
} from '../../../claims'
import { startRedisLayer } from '../../../local/redis-layer'
import { REDIS_URL, scratch } from '../../../local/services'
import type { Database } from '../../../origin/db'
import {
  getDeadInboundFailure,
  recordInboundFailure,
  replayInboundEvent,
} from '../../../origin/failures/inbound'
import { fileTestbed } from '../../support/for-file'
import { eventFixture, openTestDb } from '../../support/origin'

const tb = fileTestbed()
const run = scratch('replay-claim')
let layer: Awaited<ReturnType<typeof startRedisLayer>>
let db: Database
let claims: ClaimStore
/** Redis itself, behind the stand-in: how each case sets the claim it starts from. */
const redis = new Redis(REDIS_URL, { lazyConnect: true })

beforeAll(async () => {
  layer = await startRedisLayer({ redisUrl: REDIS_URL, token: 'replay-claim-token' })
  const rest = { url: layer.url, token: 'replay-claim-token' }
  claims = claimStore({
    ...CLAIM_DEFAULTS,
    redis: rest,
    redisKeyPrefix: run.keyPrefix,
  }) as ClaimStore
  db = openTestDb(tb.databaseUrl)
})
afterAll(async () => {
  await db?.close()
  await layer?.stop()
  redis.disconnect()
  await run.remove()
})

/** A dead inbound event whose claim stands as `claim` sets it (or is gone). */
async function deadLetter(claim: (key: string, hash: string) => Promise<unknown>) {
  const event = await eventFixture({ deliveryKey: `dedup:slack:A1:Ev${crypto.randomUUID()}` })
  await claim(claims.redisKey(event.deliveryKey), event.payloadHash)
  const id = await recordInboundFailure(db, {
    channel: event.channel,
    deliveryKey: event.deliveryKey,
    source: 'queue',
    event,
    error: 'origin 503 after 20 attempts',
    attempts: 20,
  })
  const failure = await getDeadInboundFailure(db, id)
  if (!failure) throw new Error('no dead failure')
  return { event, failure }
}

describe('a replayed dead letter’s claim', () => {
  it('spooled becomes done, keeping the time it had left; the event is one row', async () => {
    const { event, failure } = await deadLetter((key, hash) =>
      redis.set(key, settledValue('spooled', hash), 'EX', 3600),
    )
    const replay = await replayInboundEvent(db, failure, claims)
    expect(replay).toMatchObject({ outcome: 'resolved', result: { outcome: 'created' } })
    const after = await claims.inspect(event.deliveryKey)
    expect(after).toMatchObject({ status: 'settled', state: 'done' })
    expect(after?.ttlMs).toBeGreaterThan(3_590_000)
    expect(after?.ttlMs).toBeLessThanOrEqual(3_600_000)
  })

  it('a claim gone meanwhile is set done for the default TTL', async () => {
    const { event, failure } = await deadLetter(async () => {})
    await replayInboundEvent(db, failure, claims)
    const after = await claims.inspect(event.deliveryKey)
    expect(after).toMatchObject({ status: 'settled', state: 'done' })
    expect(after?.ttlMs).toBeGreaterThan((CLAIM_DEFAULTS.dedupTtlSeconds - 10) * 1000)
  })

  it('another attempt in flight, or another payload spooled, is left alone', async () => {
    const held = inflightValue('someone-else', 'h'.repeat(64))
    const inflight = await deadLetter((key) => redis.set(key, held, 'PX', 60_000))
    await replayInboundEvent(db, inflight.failure, claims)
    expect(await claims.inspect(inflight.event.deliveryKey)).toMatchObject({ status: 'inflight' })
    const other = await deadLetter((key) =>
      redis.set(key, settledValue('spooled', 'f'.repeat(64)), 'EX', 3600),
    )
    await replayInboundEvent(db, other.failure, claims)
    expect(await claims.inspect(other.event.deliveryKey)).toMatchObject({ state: 'spooled' })
  })

  it('Redis out of reach: the replay still stores the event and resolves its row', async () => {
    const { failure } = await deadLetter(async () => {})
    const dead = claimStore({
      ...CLAIM_DEFAULTS,
      redis: { url: 'http://127.0.0.1:1', token: 'x' },
      redisKeyPrefix: run.keyPrefix,
    })
    expect(await replayInboundEvent(db, failure, dead)).toMatchObject({ outcome: 'resolved' })
  })
})
