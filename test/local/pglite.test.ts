/**
 * The embedded database of `npm run dev` without DATABASE_URL: PGlite served over the Postgres
 * wire protocol. dbmate migrates it over TCP, data survives a restart, one process per directory,
 * several connections at once, and a clean stop. (Driver-level behaviour through the Neon proxy is
 * covered by neon-ws-proxy.test.ts, which runs its whole suite against PGlite too.)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Pool } from '@neondatabase/serverless'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDatabaseLayer } from '../../local/database-layer'
import { configureNeonForLocalProxy } from '../../local/neon-local'
import { startNeonWsProxy } from '../../local/neon-ws-proxy'
import { preparePgliteTemplate, startEmbeddedPostgres } from '../../local/pglite'
import { migrate } from '../../ops/migrate'

let dir: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'inbound-dedup-pglite-'))
  // initdb in WebAssembly: seconds when idle, most of a minute on two busy cores. Once per machine.
  await preparePgliteTemplate()
}, 240_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 })
  await client.connect()
  try {
    return (await client.query<T>(sql)).rows
  } finally {
    await client.end()
  }
}

describe('embedded PGlite', () => {
  it('is migrated by dbmate over TCP, keeps its data across restarts, and refuses a second owner', async () => {
    const first = await startEmbeddedPostgres({ dataDir: dir })
    try {
      expect(await migrate(first.url)).toMatch(/Applied: .*one_pending_conversation/)
      expect(await migrate(first.url)).not.toMatch(/Applied/)
      const indexes = await query<{ indexname: string }>(
        first.url,
        "SELECT indexname FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1",
      )
      expect(indexes.map((r) => r.indexname)).toEqual(
        expect.arrayContaining(['messages_channel_message_key', 'conversations_one_pending_key']),
      )
      await query(
        first.url,
        "INSERT INTO customers (channel, tenant, external_id) VALUES ('sms', 'AC1', '+15550001')",
      )
      await expect(startEmbeddedPostgres({ dataDir: dir })).rejects.toMatchObject({
        code: 'data_dir_locked',
      })
    } finally {
      await first.stop()
    }

    const second = await startEmbeddedPostgres({ dataDir: dir })
    try {
      const rows = await query<{ external_id: string }>(
        second.url,
        'SELECT external_id FROM customers',
      )
      expect(rows).toEqual([{ external_id: '+15550001' }])
    } finally {
      await second.stop()
    }
  })

  it('takes many connections at once', async () => {
    const server = await startEmbeddedPostgres({ dataDir: dir })
    const clients = Array.from(
      { length: 12 },
      () => new pg.Client({ connectionString: server.url }),
    )
    try {
      await Promise.all(clients.map((c) => c.connect()))
      expect(server.stats().activeConnections).toBe(12)
      const results = await Promise.all(clients.map((c, i) => c.query('SELECT $1::int AS i', [i])))
      expect(results.map((r) => r.rows[0]?.i)).toEqual(clients.map((_, i) => i))
    } finally {
      await Promise.all(clients.map((c) => c.end()))
      await server.stop()
    }
  })

  it('sessions take turns: concurrent Neon-driver queries never get each other’s rows', async () => {
    // pglite-socket queued single protocol messages, so Parse/Bind/Execute of different
    // connections interleaved on the one backend: 34000 "portal does not exist", or another
    // connection's rows (seen 11 of 12 workers fail with exactly this workload).
    const server = await startEmbeddedPostgres({ dataDir: dir })
    const proxy = await startNeonWsProxy({ target: { host: server.host, port: server.port } })
    configureNeonForLocalProxy(proxy.wsProxy)
    const pool = new Pool({ connectionString: server.url, max: 4 })
    try {
      await pool.query('CREATE TABLE turns (k text PRIMARY KEY, n int)')
      const workers = Array.from({ length: 12 }, async (_, n) => {
        for (let i = 0; i < 10; i++) {
          const who = `c${n}-${i}`
          if (i % 2 === 0) {
            const client = await pool.connect()
            try {
              await client.query('BEGIN')
              await client.query('INSERT INTO turns (k, n) VALUES ($1, $2)', [who, n])
              const { rows } = await client.query('SELECT k FROM turns WHERE k = $1', [who])
              await client.query('COMMIT')
              if (rows[0]?.k !== who) return `${who} got ${JSON.stringify(rows[0])}`
            } finally {
              client.release()
            }
          } else {
            // A different statement text per worker: the unnamed statement differs too.
            const { rows } = await pool.query(`SELECT $1::text AS who, ${n} AS n`, [who])
            if (rows[0]?.who !== who) return `${who} got ${JSON.stringify(rows[0])}`
          }
        }
        return 'ok'
      })
      expect(await Promise.all(workers)).toEqual(Array.from({ length: 12 }, () => 'ok'))
      const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM turns')
      expect(rows[0]?.n).toBe(60)
    } finally {
      await pool.end()
      await proxy.close()
      await server.stop()
    }
  })

  it('named prepared statements are each session’s own, also on a slot a closed session held', async () => {
    // One name, a different text per connection (as two sessions may do on Postgres): on the
    // shared backend, unscoped, the second Parse fails with 42P05 or runs the first's statement.
    const server = await startEmbeddedPostgres({ dataDir: dir })
    const connect = async () => {
      const client = new pg.Client({ connectionString: server.url })
      await client.connect()
      return client
    }
    const run = (client: pg.Client, n: number) =>
      client.query<{ n: number }>({
        name: 'same_name',
        text: `SELECT ${n} + $1::int AS n`,
        values: [1],
      })
    try {
      const [a, b] = await Promise.all([connect(), connect()])
      for (let i = 0; i < 3; i++) {
        const [ra, rb] = await Promise.all([run(a, 10), run(b, 20)])
        expect([ra.rows[0]?.n, rb.rows[0]?.n]).toEqual([11, 21])
      }
      // b's slot goes to the next connection, whose first Parse of the name must still work.
      await b.end()
      const c = await connect()
      expect((await run(c, 30)).rows[0]?.n).toBe(31)
      expect((await run(a, 10)).rows[0]?.n).toBe(11)
      await Promise.all([a.end(), c.end()])
    } finally {
      await server.stop()
    }
  })

  it('a session idle in a transaction is cut off after the hold timeout, and rolled back', async () => {
    const server = await startEmbeddedPostgres({ dataDir: dir, holdTimeoutMs: 500 })
    const idle = new pg.Client({ connectionString: server.url })
    const other = new pg.Client({ connectionString: server.url })
    idle.on('error', () => {})
    try {
      await Promise.all([idle.connect(), other.connect()])
      await idle.query('BEGIN')
      await idle.query(
        "INSERT INTO customers (channel, tenant, external_id) VALUES ('sms', 'AC1', 'held')",
      )
      // Waits for the floor, gets it when the idle session is dropped.
      const { rows } = await other.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM customers WHERE external_id = 'held'",
      )
      expect(rows[0]?.n).toBe(0)
      await expect(idle.query('SELECT 1')).rejects.toThrow()
    } finally {
      await Promise.all([idle.end().catch(() => {}), other.end()])
      await server.stop()
    }
  })

  it('stops cleanly with a connection still open in a transaction', async () => {
    const server = await startEmbeddedPostgres({ dataDir: dir })
    const client = new pg.Client({ connectionString: server.url })
    client.on('error', () => {})
    await client.connect()
    await client.query('BEGIN')
    await client.query(
      "INSERT INTO customers (channel, tenant, external_id) VALUES ('sms', 'AC1', 'uncommitted')",
    )
    await server.stop()
    await client.end().catch(() => {})
    const again = await startEmbeddedPostgres({ dataDir: dir })
    try {
      const rows = await query<{ n: number }>(
        again.url,
        "SELECT count(*)::int AS n FROM customers WHERE external_id = 'uncommitted'",
      )
      expect(rows[0]?.n).toBe(0)
    } finally {
      await again.stop()
    }
  })

  it('as the stack’s database layer: migrated, proxied, with a small origin pool', async () => {
    const layer = await startDatabaseLayer({ pgliteDir: dir })
    try {
      expect(layer.mode).toBe('pglite')
      expect(layer.originEnv.DB_POOL_MAX).toBe('4')
      expect(layer.originEnv.NEON_WS_PROXY).toBe(layer.neonWsProxy)
      expect(layer.pglite?.stats().maxConnections).toBeGreaterThan(1)
    } finally {
      await layer.stop()
    }
  })
})
