/**
 * The claim store's settles that ride one Upstash pipeline, against the Upstash REST stand-in on
 * real Redis: a queued event's `spooled` with its `spool_queued` count (one round trip, not two),
 * and a consumer batch's `delivered` settles with their counts (one round trip for the batch).
 * Round trips are counted at `fetch`; what they wrote is read back from Redis.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { ClaimStore, inflightValue, settledValue } from '../../claims'
import { upstashPort } from '../../claims/platforms/upstash'
import { deleteRedisPrefix, REDIS_URL, runId } from '../../local/services'
import { type RunningUpstashRest, realRedis, startUpstashRest } from '../../local/upstash-rest'

const TOKEN = `test-token-${runId()}`
const PREFIX = `test:claim-pipeline:${runId()}:`
let server: RunningUpstashRest
let backend: Awaited<ReturnType<typeof realRedis>>
let n = 0
const key = (label: string) => `dedup:slack:T1:${label}-${++n}`

beforeAll(async () => {
  backend = await realRedis(REDIS_URL)
  server = await startUpstashRest({ backend, token: TOKEN })
})
afterAll(async () => {
  await server?.close()
  await backend?.close()
  await deleteRedisPrefix(PREFIX)
})
afterEach(() => vi.restoreAllMocks())

function store(): {
  claims: ClaimStore
  roundTrips: () => number
  raw: ReturnType<typeof upstashPort>
} {
  const raw = upstashPort({ url: server.url, token: TOKEN }, 2_000)
  const claims = new ClaimStore(raw, {
    claimLeaseMs: 30_000,
    dedupTtlSeconds: 3_600,
    redisKeyPrefix: PREFIX,
  })
  const fetchSpy = vi.spyOn(globalThis, 'fetch')
  return { claims, raw, roundTrips: () => fetchSpy.mock.calls.length }
}

const get = (raw: ReturnType<typeof upstashPort>, redisKey: string) =>
  raw.evalScript(`return redis.call('GET', KEYS[1])`, [redisKey], [])

describe('the claim store over one pipeline', () => {
  it('spooled with its count: one round trip, the key settled and the field counted', async () => {
    const { claims, raw, roundTrips } = store()
    const k = key('queued')
    const token = 'tok-a'
    expect(await claims.claim(k, token, 'h1')).toEqual({ status: 'claimed' })
    const before = roundTrips()
    expect(await claims.complete(k, token, 'h1', 'spooled', 600, 'spool_queued:slack')).toBe(true)
    expect(roundTrips() - before).toBe(1)
    expect(await get(raw, claims.redisKey(k))).toBe(settledValue('spooled', 'h1'))
    expect((await claims.stats())['spool_queued:slack']).toBe(1)
  })

  it("another attempt's key is left alone, and the count still lands (the event was queued)", async () => {
    const { claims, raw } = store()
    const k = key('taken')
    await claims.claim(k, 'theirs', 'h1')
    const counted = (await claims.stats())['spool_queued:line'] ?? 0
    expect(await claims.complete(k, 'ours', 'h1', 'spooled', 600, 'spool_queued:line')).toBe(false)
    expect(await get(raw, claims.redisKey(k))).toBe(inflightValue('theirs', 'h1'))
    expect((await claims.stats())['spool_queued:line']).toBe(counted + 1)
  })

  it('a batch delivered: one round trip; spooled and flushed keys done, a held one untouched, counts by their number', async () => {
    const { claims, raw, roundTrips } = store()
    const spooled = [key('b1'), key('b2'), key('b3')]
    for (const k of spooled) {
      await claims.claim(k, `t-${k}`, 'h')
      await claims.complete(k, `t-${k}`, 'h', 'spooled')
    }
    const flushed = key('gone')
    const held = key('held')
    await claims.claim(held, 'another', 'h')
    const before = roundTrips()
    const wrote = await claims.deliveredAll(
      [...spooled, flushed, held].map((k) => ({ key: k, hash: 'h', ttlSeconds: 600 })),
      { 'spool_delivered:slack': 4, 'spool_delivered:email': 0 },
    )
    expect(roundTrips() - before).toBe(1)
    expect(wrote).toEqual([true, true, true, true, false])
    for (const k of [...spooled, flushed]) {
      expect(await get(raw, claims.redisKey(k))).toBe(settledValue('done', 'h'))
    }
    expect(await get(raw, claims.redisKey(held))).toBe(inflightValue('another', 'h'))
    const stats = await claims.stats()
    expect(stats['spool_delivered:slack']).toBe(4)
    expect(stats['spool_delivered:email']).toBeUndefined()
  })

  it('a command that fails in the pipeline is its own error; the others are answered', async () => {
    const { raw } = store()
    const k = `${PREFIX}${key('mixed')}`
    const replies = await raw.pipeline([
      ['SET', k, 'not-a-number'],
      ['HINCRBY', k, 'f', 1],
      ['GET', k],
    ])
    expect(replies[0]).toEqual({ result: 'OK' })
    expect(replies[1]).toMatchObject({ error: expect.stringMatching(/WRONGTYPE/) })
    expect(replies[2]).toEqual({ result: 'not-a-number' })
  })
})
