/**
 * Conformance of the local Upstash REST stand-in with the real `@upstash/redis` client, on both
 * backends it supports: a real Redis (keys under a unique prefix, deleted afterwards) and the
 * embedded in-memory store. What the Worker relies on is checked here once, so a client upgrade or
 * a stand-in change that breaks the protocol fails in one obvious place.
 */
import { Redis as Upstash } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deleteRedisPrefix, REDIS_URL, runId } from '../../local/services'
import {
  embeddedRedis,
  type RedisBackend,
  type RunningUpstashRest,
  realRedis,
  startUpstashRest,
} from '../../local/upstash-rest'

const TOKEN = `test-token-${runId()}`

/** Polls until `check` is true or the bound passes; expiry is asserted by state, never by time. */
async function eventually(check: () => Promise<boolean>, boundMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + boundMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((r) => setTimeout(r, 25))
  }
  return false
}

function client(url: string, options: { pipelining: boolean; base64?: boolean; token?: string }) {
  return new Upstash({
    url,
    token: options.token ?? TOKEN,
    enableAutoPipelining: options.pipelining,
    enableTelemetry: false,
    readYourWrites: false,
    responseEncoding: options.base64 === false ? false : 'base64',
    retry: { retries: 0 },
    signal: () => AbortSignal.timeout(5_000),
  })
}

const backends: Array<[string, () => Promise<RedisBackend>, string]> = [
  ['real Redis', async () => realRedis(REDIS_URL), `test:upstash:${runId()}:`],
  ['embedded store', () => embeddedRedis(), 'emb:'],
]

describe.each(backends)('Upstash REST stand-in on %s', (_name, makeBackend, prefix) => {
  let server: RunningUpstashRest
  let backend: RedisBackend
  let n = 0
  /** A fresh key per test, under this run's prefix. */
  const key = (label: string) => `${prefix}${label}:${++n}`

  beforeAll(async () => {
    backend = await makeBackend()
    server = await startUpstashRest({ backend, token: TOKEN })
  })
  afterAll(async () => {
    await server?.close()
    await backend?.close()
    if (prefix.startsWith('test:')) await deleteRedisPrefix(prefix)
  })

  describe.each([
    ['auto-pipelining on', true],
    ['auto-pipelining off', false],
  ])('%s', (_label, pipelining) => {
    it('SET NX PX claims once, reports the holder, and frees the key after expiry', async () => {
      const redis = client(server.url, { pipelining })
      const k = key('claim')
      expect(await redis.set(k, 'first', { nx: true, px: 400 })).toBe('OK')
      expect(await redis.set(k, 'second', { nx: true, px: 400 })).toBeNull()
      expect(await redis.get(k)).toBe('first')
      const pttl = await redis.pttl(k)
      expect(pttl).toBeGreaterThan(0)
      expect(pttl).toBeLessThanOrEqual(400)
      expect(await eventually(async () => (await redis.exists(k)) === 0)).toBe(true)
      expect(await redis.set(k, 'third', { nx: true, ex: 60 })).toBe('OK')
      expect(await redis.get(k)).toBe('third')
      const ttl = await redis.ttl(k)
      expect(ttl).toBeGreaterThan(50)
      expect(ttl).toBeLessThanOrEqual(60)
    })

    it('SET with GET returns the previous value; XX only replaces an existing key', async () => {
      const redis = client(server.url, { pipelining })
      const k = key('xx')
      expect(await redis.set(k, 'a', { xx: true })).toBeNull()
      expect(await redis.exists(k)).toBe(0)
      await redis.set(k, 'a')
      expect(await redis.set(k, 'b', { get: true })).toBe('a')
      expect(await redis.get(k)).toBe('b')
    })

    it('round-trips numbers, JSON objects, unicode and base64-looking strings', async () => {
      const redis = client(server.url, { pipelining })
      const [num, obj, uni, b64] = [key('num'), key('obj'), key('uni'), key('b64')]
      await redis.set(num, '123')
      expect(await redis.get(num)).toBe(123)
      expect(await redis.incr(num)).toBe(124)
      expect(await redis.incrby(num, 10)).toBe(134)
      await redis.set(obj, { state: 'done', messageId: '42' })
      expect(await redis.get(obj)).toEqual({ state: 'done', messageId: '42' })
      await redis.set(uni, 'héllo ✓ 🚀 日本')
      expect(await redis.get(uni)).toBe('héllo ✓ 🚀 日本')
      // A value that is itself valid base64 must not be decoded twice.
      await redis.set(b64, 'aGVsbG8=')
      expect(await redis.get(b64)).toBe('aGVsbG8=')
      expect(await redis.get(key('missing'))).toBeNull()
      expect(await redis.mget(num, key('missing'), uni)).toEqual([134, null, 'héllo ✓ 🚀 日本'])
    })

    it('hashes, deletes and counts', async () => {
      const redis = client(server.url, { pipelining })
      const h = key('hash')
      expect(await redis.hset(h, { state: 'inflight', token: 'abc' })).toBe(2)
      expect(await redis.hget(h, 'state')).toBe('inflight')
      expect(await redis.hgetall(h)).toEqual({ state: 'inflight', token: 'abc' })
      expect(await redis.del(h, key('missing'))).toBe(1)
      expect(await redis.hgetall(h)).toBeNull()
    })

    it('runs Lua: eval, and createScript (EVALSHA with its NOSCRIPT fallback)', async () => {
      const redis = client(server.url, { pipelining })
      const k = key('lua')
      await redis.set(k, 'token-1')
      // Compare-and-delete: the shape the Worker uses to release only its own claim.
      const release = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`
      expect(await redis.eval(release, [k], ['token-2'])).toBe(0)
      expect(await redis.eval(release, [k], ['token-1'])).toBe(1)
      expect(await redis.exists(k)).toBe(0)

      // A script body unique to this run, so EVALSHA really misses on a shared Redis first.
      const script = redis.createScript<string>(
        `-- ${runId()}\nredis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])`,
      )
      expect(await script.exec([k], ['via-script'])).toBe('via-script')
      expect(await script.exec([k], ['again'])).toBe('again')
    })

    it('explicit pipeline: results in order, a failing command does not hide the others', async () => {
      const redis = client(server.url, { pipelining })
      const [a, s] = [key('pa'), key('ps')]
      await redis.set(s, 'not-a-number')
      const results = await redis.pipeline().set(a, 1).incr(a).get(a).exec()
      expect(results).toEqual(['OK', 2, 2])
      await expect(redis.pipeline().incr(a).incr(s).exec()).rejects.toThrow(/not an integer/)
      expect(await redis.get(a)).toBe(3)
    })

    it('MULTI/EXEC through /multi-exec', async () => {
      const redis = client(server.url, { pipelining })
      const k = key('tx')
      const results = await redis
        .multi()
        .set(k, 'v', { nx: true, px: 60_000 })
        .get(k)
        .pttl(k)
        .exec()
      expect(results[0]).toBe('OK')
      expect(results[1]).toBe('v')
      expect(results[2]).toBeGreaterThan(0)
    })

    it('a Redis error rejects with the error text', async () => {
      const redis = client(server.url, { pipelining })
      const s = key('err')
      await redis.set(s, 'text')
      await expect(redis.incr(s)).rejects.toThrow(/not an integer/)
    })

    it('a wrong token is rejected, and nothing is written', async () => {
      const bad = client(server.url, { pipelining, token: 'wrong' })
      const k = key('auth')
      await expect(bad.set(k, 'x')).rejects.toThrow(/Unauthorized/)
      expect(await client(server.url, { pipelining }).exists(k)).toBe(0)
    })
  })

  it('without base64 response encoding, strings come back as plain text', async () => {
    const redis = client(server.url, { pipelining: false, base64: false })
    const k = key('plain')
    await redis.set(k, 'plain ✓')
    expect(await redis.get(k)).toBe('plain ✓')
  })

  it('raw protocol: base64 only for strings, numbers and null stay JSON, errors stay text', async () => {
    const k = key('raw')
    const post = (path: string, body: unknown) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'upstash-encoding': 'base64' },
        body: JSON.stringify(body),
      })
    const set = await post('/', ['set', k, 'v', 'nx', 'px', 60_000])
    expect(await set.json()).toEqual({ result: Buffer.from('OK').toString('base64') })
    const pipe = await post('/pipeline', [
      ['get', k],
      ['incr', k],
      ['exists', k],
      ['get', key('none')],
    ])
    const body = (await pipe.json()) as Array<{ result?: unknown; error?: string }>
    expect(body[0]).toEqual({ result: Buffer.from('v').toString('base64') })
    expect(body[1]?.error).toMatch(/not an integer/)
    expect(body[2]).toEqual({ result: 1 })
    expect(body[3]).toEqual({ result: null })
    const one = await post('/', ['incr', k])
    expect(one.status).toBe(400)
    expect(((await one.json()) as { error: string }).error).toMatch(/not an integer/)
    const unknown = await post('/', ['nosuchcommand', k])
    expect(unknown.status).toBe(400)
    const notJson = await fetch(`${server.url}/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: 'not json',
    })
    expect(notJson.status).toBe(400)
  })

  it('setLatency delays answers (the hook fault tests use)', async () => {
    const redis = client(server.url, { pipelining: false })
    server.setLatency(300)
    try {
      const timed = new Upstash({
        url: server.url,
        token: TOKEN,
        enableAutoPipelining: false,
        enableTelemetry: false,
        retry: { retries: 0 },
        signal: () => AbortSignal.timeout(50),
      })
      await expect(timed.get(key('slow'))).rejects.toThrow()
    } finally {
      server.setLatency(0)
    }
    expect(await redis.get(key('slow'))).toBeNull()
  })

  it('counts each command it runs by name: one alone, each of a pipeline and a transaction; none refused', async () => {
    const k = key('count')
    const post = (path: string, body: unknown, token = TOKEN) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      }).then((res) => res.arrayBuffer())
    const before = server.commandCounts()
    const delta = () => {
      const now = server.commandCounts()
      return Object.fromEntries(
        Object.entries(now)
          .map(([name, n]) => [name, n - (before[name] ?? 0)] as const)
          .filter(([, n]) => n > 0),
      )
    }
    await post('/', ['SET', k, 'v', 'nx', 'px', 60_000])
    await post('/pipeline', [
      ['get', k],
      ['pttl', k],
      ['get', k],
    ])
    await post('/multi-exec', [
      ['set', k, 'w'],
      ['get', k],
    ])
    await post('/', ['get', k], 'wrong-token')
    await post('/', 'not a command')
    expect(delta()).toEqual({ set: 2, get: 3, pttl: 1 })
  })
})
