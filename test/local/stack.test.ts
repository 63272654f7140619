/**
 * The stack library that `npm run dev`, the e2e tests, the fault suite and the benchmark share:
 * each piece starts on port 0, answers, restarts where it should, and leaves nothing behind.
 */
import { connect } from 'node:net'
import { Redis as Upstash } from '@upstash/redis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signalGroup } from '../../local/processes'
import { ADMIN_DATABASE_URL, deleteRedisPrefix, REDIS_URL, runId } from '../../local/services'
import {
  type DatabaseLayer,
  ensureDatabase,
  startDatabaseLayer,
  startLocalStack,
  startOrigin,
  startRedisLayer,
  startWorkerDev,
  startWorkerMiniflare,
} from '../../local/stack'

const SECRET = `stack-test-secret-${runId()}`

/** True when something accepts TCP connections on the port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
  await admin.connect()
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
  } finally {
    await admin.end()
  }
}

function databaseUrl(name: string): string {
  const url = new URL(ADMIN_DATABASE_URL)
  url.pathname = `/${name}`
  return url.toString()
}

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
    const name = `inbound_dedup_t_stack_${runId()}`
    let layer: DatabaseLayer | undefined
    try {
      layer = await startDatabaseLayer({ databaseUrl: databaseUrl(name) })
      expect(layer.mode).toBe('postgres')
      expect(layer.migrations).toMatch(/Applied: .*core_tables/)
      expect(layer.originEnv).toEqual({
        DATABASE_URL: databaseUrl(name),
        NEON_WS_PROXY: layer.neonWsProxy,
      })
      // Second time: exists, nothing to apply.
      expect(await ensureDatabase(databaseUrl(name))).toBe(false)
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
      await dropDatabase(name)
    }
    expect(await listening(Number(layer?.neonWsProxy.split(':')[1]?.split('/')[0]))).toBe(false)
  })

  it('refuses a database name it would have to quote', async () => {
    await expect(ensureDatabase(databaseUrl('bad-name";drop'))).rejects.toThrow(/letters, digits/)
  })
})

describe('startOrigin', () => {
  let name: string
  let database: DatabaseLayer

  beforeAll(async () => {
    name = `inbound_dedup_t_stack_${runId()}`
    database = await startDatabaseLayer({ databaseUrl: databaseUrl(name) })
  })
  afterAll(async () => {
    await database?.stop()
    if (name) await dropDatabase(name)
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
      expect(signalGroup(firstPid, 0)).toBe(false)
      expect(await listening(origin.port)).toBe(false)

      const port = origin.port
      await origin.restart()
      expect(origin.port).toBe(port)
      expect(origin.pid).not.toBe(firstPid)
      expect(origin.running).toBe(true)
      expect((await fetch(`${origin.url}/healthz`)).status).toBe(200)

      // SIGTERM is a graceful close: the origin exits 0 by itself, nothing is SIGKILLed.
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
    ORIGIN_URL: 'http://127.0.0.1:9', // nothing listens; /healthz does not call the origin
    ORIGIN_SHARED_SECRET: SECRET,
    UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:9',
    UPSTASH_REDIS_REST_TOKEN: SECRET,
  }

  it('under wrangler dev: ready on /healthz, secrets masked, whole group stopped', async () => {
    const worker = await startWorkerDev({ vars })
    let pid = 0
    try {
      pid = worker.pid
      const res = await fetch(`${worker.url}/healthz`)
      expect(res.status).toBe(200)
      expect(await res.text()).not.toContain(SECRET)
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
      const body = (await res.json()) as { origin?: boolean; spool?: boolean }
      expect(body.origin).toBe(true)
      // wrangler.toml's queue producer is bound: origin failures go to the spool queue.
      expect(body.spool).toBe(true)
    } finally {
      await worker.stop()
    }
    expect(await listening(worker.port)).toBe(false)
  })
})

describe('startLocalStack', () => {
  it('wires database, Redis and origin together, and stops all of it', async () => {
    const name = `inbound_dedup_t_stack_${runId()}`
    const stack = await startLocalStack({
      databaseUrl: databaseUrl(name),
      redisUrl: REDIS_URL,
      upstashToken: SECRET,
      originSharedSecret: SECRET,
      worker: 'none',
    })
    try {
      expect((await fetch(`${stack.origin.url}/healthz`)).status).toBe(200)
      expect(stack.workerVars).toMatchObject({
        ORIGIN_URL: stack.origin.url,
        UPSTASH_REDIS_REST_URL: stack.redis.url,
      })
    } finally {
      await stack.stop()
      await dropDatabase(name)
    }
    expect(await listening(stack.origin.port)).toBe(false)
    expect(await listening(stack.redis.port)).toBe(false)
  })
})
