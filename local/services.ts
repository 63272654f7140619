/**
 * Where the tests and the bench find the real services (REDIS_URL, DATABASE_URL as the admin
 * connection), and fresh per-run resources on them: a database with the migrations applied, and a
 * Redis key prefix. Everything made here is dropped afterwards.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { migrate } from '../ops/migrate'
import { redact } from './redact'

export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379'
export const ADMIN_DATABASE_URL =
  process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres'

const HOW_TO_START = {
  postgres: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
  redis: 'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no',
}

export function runId(): string {
  return `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`
}

/** Fails at once, naming the server and how to start it, instead of timing out test by test. */
export async function assertServicesUp(): Promise<void> {
  const client = new pg.Client({
    connectionString: ADMIN_DATABASE_URL,
    connectionTimeoutMillis: 3000,
  })
  try {
    await client.connect()
    await client.query('select 1')
  } catch (err) {
    throw new Error(
      `Postgres is not reachable at ${redact(ADMIN_DATABASE_URL)} (${(err as Error).message}).\n` +
        `Start it with: ${HOW_TO_START.postgres}  (or set DATABASE_URL)`,
    )
  } finally {
    await client.end().catch(() => {})
  }
  const redis = new Redis(REDIS_URL, {
    lazyConnect: true,
    connectTimeout: 3000,
    maxRetriesPerRequest: 0,
  })
  redis.on('error', () => {})
  try {
    await redis.connect()
    await redis.ping()
  } catch (err) {
    throw new Error(
      `Redis is not reachable at ${redact(REDIS_URL)} (${(err as Error).message}).\n` +
        `Start it with: ${HOW_TO_START.redis}  (or set REDIS_URL)`,
    )
  } finally {
    redis.disconnect()
  }
}

/** The URL of database `name` on the shared server. */
export function databaseUrlOf(name: string): string {
  const url = new URL(ADMIN_DATABASE_URL)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * Names for one test's own things on the shared servers (a database it lets something else create,
 * a key prefix), and their removal, whether or not they were made.
 */
export function scratch(label: string): {
  databaseName: string
  databaseUrl: string
  keyPrefix: string
  remove(): Promise<void>
} {
  const id = runId()
  const databaseName = `inbound_dedup_t_${label}_${id}`
  const keyPrefix = `test:${label}:${id}:`
  return {
    databaseName,
    databaseUrl: databaseUrlOf(databaseName),
    keyPrefix,
    async remove() {
      await dropDatabase(databaseName)
      await deleteRedisPrefix(keyPrefix)
    },
  }
}

export interface TestDatabase {
  name: string
  url: string
  drop(): Promise<void>
}

/** Creates `inbound_dedup_t_<id>`, migrates it with the real migrations, and drops it on request. */
export async function createTestDatabase(id = runId()): Promise<TestDatabase> {
  const name = `inbound_dedup_t_${id}`
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE "${name}"`)
  } finally {
    await admin.end()
  }
  const url = databaseUrlOf(name)
  await migrate(url)
  return {
    name,
    url,
    drop: () => dropDatabase(name),
  }
}

/** Drops a database of the shared server, cutting whoever is still connected. */
export async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL })
  await admin.connect()
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)
  } finally {
    await admin.end()
  }
}

/** Deletes every Redis key under a prefix (SCAN, never KEYS, so a shared Redis is not blocked). */
export async function deleteRedisPrefix(prefix: string, redisUrl = REDIS_URL): Promise<number> {
  const redis = new Redis(redisUrl)
  let deleted = 0
  try {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
      cursor = next
      if (keys.length > 0) deleted += await redis.del(...keys)
    } while (cursor !== '0')
  } finally {
    redis.disconnect()
  }
  return deleted
}

/**
 * A small pool straight to a test database (TCP, past the origin and its proxy), for assertions.
 * The database is dropped `WITH (FORCE)` at the end, or stopped in a fault case, which can cut a
 * connection the pool holds (57P01); the pool re-emits that as an `error` event, and without a
 * listener it would be an unhandled error of whatever test runs then. Connecting is bounded.
 */
export function databasePool(url: string, max = 2): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 5_000 })
  pool.on('error', () => {})
  return pool
}
