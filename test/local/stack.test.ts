/**
 * The stack that `npm run dev`, the e2e and email tests, the fault suite, the soak and the bench
 * share (local/stack.ts and its pieces): each piece starts on port 0, answers, restarts where it
 * should, and leaves nothing behind.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { Redis as Upstash } from '@upstash/redis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DatabaseLayer, ensureDatabase, startDatabaseLayer } from '../../local/database-layer'
import { startOrigin } from '../../local/origin-process'
import { signalGroup } from '../../local/processes'
import { isListening as listening } from '../../local/readiness'
import { startRedisLayer } from '../../local/redis-layer'
import { databaseUrlOf, deleteRedisPrefix, REDIS_URL, runId, scratch } from '../../local/services'
import { startStack } from '../../local/stack'
import { startWorkerDev, startWorkerMiniflare } from '../../local/worker-runtime'

const SECRET = `stack-test-secret-${runId()}`

describe('startRedisLayer', () => {
  it.each([
    ['real', REDIS_URL],
    ['embedded', undefined],
  ])('%s: serves the Upstash protocol with its token, and stops', async (mode, redisUrl) => {
    const prefix = `test:stack:${runId()}:`
    const layer = await startRedisLayer({ redisUrl, token: SECRET })
    try {
      expect(layer.mode).toBe(mode)
      const redis = new Upstash({ url: layer.url, token: SECRET, retry: { retries: 0 } })
      expect(await redis.set(`${prefix}k`, 'v', { nx: true, px: 10_000 })).toBe('OK')
      expect(await redis.get(`${prefix}k`)).toBe('v')
    } finally {
      await layer.stop()
      await layer.stop() // idempotent
      if (redisUrl) await deleteRedisPrefix(prefix)
    }
    expect(await listening(layer.port)).toBe(false)
  })
})

describe('startDatabaseLayer on real Postgres', () => {
  it('creates the named database when missing, migrates it, and serves it through the proxy', async () => {
    const run = scratch('stack')
    let layer: DatabaseLayer | undefined
    try {
      layer = await startDatabaseLayer({ databaseUrl: run.databaseUrl })
      expect(layer.mode).toBe('postgres')
      expect(layer.migrations).toMatch(/Applied: .*core_tables/)
      expect(layer.originEnv).toEqual({
        DATABASE_URL: run.databaseUrl,
        NEON_WS_PROXY: layer.neonWsProxy,
      })
      // Second time: exists, nothing to apply.
      expect(await ensureDatabase(run.databaseUrl)).toBe(false)
      const { Pool } = await import('@neondatabase/serverless')
      const { configureNeonForLocalProxy } = await import('../../local/neon-local')
      configureNeonForLocalProxy(layer.neonWsProxy)
      const pool = new Pool({ connectionString: layer.databaseUrl, max: 2 })
      try {
        const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM messages')
        expect(rows[0]?.n).toBe(0)
      } finally {
        await pool.end()
      }
    } finally {
      await layer?.stop()
      await run.remove()
    }
    expect(await listening(Number(layer?.neonWsProxy.split(':')[1]?.split('/')[0]))).toBe(false)
  })

  it('refuses a database name it would have to quote', async () => {
    await expect(ensureDatabase(databaseUrlOf('bad-name";drop'))).rejects.toThrow(/letters, digits/)
  })
})

describe('startOrigin', () => {
  const run = scratch('stack')
  let database: DatabaseLayer

  beforeAll(async () => {
    database = await startDatabaseLayer({ databaseUrl: run.databaseUrl })
  })
  afterAll(async () => {
    await database?.stop()
    await run.remove()
  })

  it('starts on port 0, survives a crash by restart on the same port, and stops its whole group', async () => {
    const lines: string[] = []
    const origin = await startOrigin({
      env: { ...database.originEnv, ORIGIN_SHARED_SECRET: SECRET },
      onLine: (line) => lines.push(line),
    })
    try {
      expect(origin.port).toBeGreaterThan(0)
      expect((await fetch(`${origin.url}/healthz`)).status).toBe(200)
      const firstPid = origin.pid

      const exit = await origin.kill('SIGKILL')
      expect(exit.signal ?? exit.code).toBeTruthy()
      expect(origin.running).toBe(false)
      // Killed through the handle: down, not crashed.
      expect(origin.crashed).toBe(false)
      expect(signalGroup(firstPid, 0)).toBe(false)
      expect(await listening(origin.port)).toBe(false)

      const port = origin.port
      await origin.restart()
      expect(origin.port).toBe(port)
      expect(origin.pid).not.toBe(firstPid)
      expect(origin.running).toBe(true)
      expect((await fetch(`${origin.url}/healthz`)).status).toBe(200)

      // A death the handle did not cause is a crash.
      signalGroup(origin.pid, 'SIGKILL')
      await origin.exited
      expect(origin.crashed).toBe(true)
      await origin.restart()
      expect(origin.crashed).toBe(false)

      // SIGTERM is a graceful close: the origin exits 0 by itself, nothing is SIGKILLed.
      // At once after it is ready too (the listening line comes after its signal handlers).
      expect(await origin.kill('SIGTERM')).toEqual({ code: 0, signal: null })
    } finally {
      await origin.stop()
    }
    expect(signalGroup(origin.pid, 0)).toBe(false)
    expect(await listening(origin.port)).toBe(false)
    // The shared secret never reaches the output.
    expect(lines.join('\n')).not.toContain(SECRET)
    expect(lines.some((l) => l.includes('origin listening'))).toBe(true)
  })

  it('does not inherit origin settings from this process; a bad config fails fast with the reason', async () => {
    const saved = process.env.ORIGIN_SHARED_SECRET
    process.env.ORIGIN_SHARED_SECRET = 'inherited-by-accident'
    try {
      await expect(
        startOrigin({ env: { ...database.originEnv }, readyTimeoutMs: 30_000 }),
      ).rejects.toThrow(/exited .*before it was ready[\s\S]*ORIGIN_SHARED_SECRET/)
    } finally {
      if (saved === undefined) delete process.env.ORIGIN_SHARED_SECRET
      else process.env.ORIGIN_SHARED_SECRET = saved
    }
  })
})

describe('the Worker', () => {
  const vars = {
    ORIGIN_URL: 'http://127.0.0.1:9', // nothing listens: /healthz reports the origin unreachable
    ORIGIN_SHARED_SECRET: SECRET,
    UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:9',
    UPSTASH_REDIS_REST_TOKEN: SECRET,
  }

  it('under wrangler dev: ready on /healthz, secrets masked and off every command line, whole group stopped', async () => {
    const operatorToken = `operator-$HOME-'"${SECRET}`
    const worker = await startWorkerDev({ vars: { ...vars, OPERATOR_TOKEN: operatorToken } })
    let pid = 0
    try {
      pid = worker.pid
      const res = await fetch(`${worker.url}/healthz`)
      expect(res.status).toBe(200)
      const text = await res.text()
      expect(text).not.toContain(SECRET)
      // wrangler.toml's queues and R2 bucket, simulated locally by wrangler dev.
      expect(JSON.parse(text)).toMatchObject({ spool: true, spoolBodies: true })
      // No process of this machine shows a secret in its arguments (`ps`)...
      expect(commandLinesWith(SECRET)).toEqual([])
      // ... and the Worker has it, exactly (`$`, both quotes): /healthz/deep answers the token.
      const deep = await fetch(`${worker.url}/healthz/deep`, {
        headers: { authorization: `Bearer ${operatorToken}` },
      })
      await deep.arrayBuffer()
      expect(deep.status).not.toBe(404)
      expect(deep.status).not.toBe(401)
    } finally {
      await worker.stop()
    }
    expect(signalGroup(pid, 0)).toBe(false)
    expect(await listening(worker.port)).toBe(false)
    expect(worker.output(500)).not.toContain(SECRET)
  })

  it('in Miniflare from the built bundle: ready, with wrangler.toml [vars] and the given bindings', async () => {
    const worker = await startWorkerMiniflare({ vars })
    try {
      const res = await fetch(`${worker.url}/healthz`)
      expect(res.status).toBe(200)
      const body = (await res.json()) as {
        origin?: string
        spool?: boolean
        spoolBodies?: boolean
      }
      expect(body.origin).toBe('unreachable')
      // wrangler.toml's queue producer is bound: origin failures go to the spool queue; and its
      // R2 bucket: so do events over a queue message.
      expect(body.spool).toBe(true)
      expect(body.spoolBodies).toBe(true)
    } finally {
      await worker.stop()
    }
    expect(await listening(worker.port)).toBe(false)
  })
})

describe('startStack', () => {
  it('wires database, Redis and origin together, and stops all of it', async () => {
    const run = scratch('stack')
    const stack = await startStack({
      postgres: { url: run.databaseUrl },
      redis: 'shared',
      upstashToken: SECRET,
      originSecret: SECRET,
      keyPrefix: run.keyPrefix,
    })
    try {
      expect((await fetch(`${stack.origin.url}/healthz`)).status).toBe(200)
      expect(stack.workerVars).toMatchObject({
        ORIGIN_URL: stack.origin.url,
        UPSTASH_REDIS_REST_URL: stack.redis.url,
        REDIS_KEY_PREFIX: stack.keyPrefix,
      })
      expect(stack.originEnv).toMatchObject({ REDIS_KEY_PREFIX: stack.keyPrefix })
      expect(() => stack.worker).toThrow(/no Worker/)
    } finally {
      await stack.stop()
      await run.remove()
    }
    expect(await listening(stack.origin.port)).toBe(false)
    expect(await listening(stack.redis.port)).toBe(false)
  })

  it('a Redis outage and back: the stand-in comes back on the same port, its command count kept', async () => {
    const layer = await startRedisLayer({ redisUrl: REDIS_URL, token: SECRET })
    try {
      const { port } = layer
      const client = () => new Upstash({ url: layer.url, token: SECRET, retry: { retries: 0 } })
      expect(await client().ping()).toBe('PONG')
      await layer.stop()
      expect(await listening(port)).toBe(false)
      await layer.start()
      expect(layer.port).toBe(port)
      expect(await client().ping()).toBe('PONG')
      expect(layer.commandCounts().ping).toBe(2)
    } finally {
      await layer.stop()
    }
  })

  it('a piece that does not start stops what did, and says which piece it was', async () => {
    await expect(
      startStack({ redis: 'embedded', origins: [], worker: { vars: {} } }),
    ).rejects.toThrow(/needs an origin/)
  })
})

/** The pids whose command line holds `text` (every process this user may read). */
function commandLinesWith(text: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text)
      } catch {
        return false
      }
    })
    .map(Number)
}
