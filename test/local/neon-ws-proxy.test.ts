/**
 * Conformance of the local Neon WebSocket proxy with the real `@neondatabase/serverless` driver
 * (Pool and Client) against a fresh, migrated database on the real Postgres: queries,
 * transactions, unique violations as the origin sees them, concurrency, and clean shutdown.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client, type DatabaseError, Pool } from '@neondatabase/serverless'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { configureNeonForLocalProxy } from '../../local/neon-local'
import { type RunningProxy, startNeonWsProxy } from '../../local/neon-ws-proxy'
import { startEmbeddedPostgres } from '../../local/pglite'
import { createTestDatabase } from '../../local/services'
import { migrate } from '../../ops/migrate'

/** A migrated database behind the proxy, and a way to count the server connections still open. */
interface Target {
  url: string
  openConnections(): Promise<number>
  stop(): Promise<void>
}

async function realPostgres(): Promise<Target> {
  const db = await createTestDatabase()
  return {
    url: db.url,
    async openConnections() {
      const admin = new pg.Client({ connectionString: db.url })
      await admin.connect()
      try {
        const { rows } = await admin.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [db.name],
        )
        return rows[0]?.n ?? -1
      } finally {
        await admin.end()
      }
    },
    stop: () => db.drop(),
  }
}

async function embeddedPglite(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'inbound-dedup-pglite-'))
  const pglite = await startEmbeddedPostgres({ dataDir: dir })
  await migrate(pglite.url)
  return {
    url: pglite.url,
    openConnections: async () => pglite.stats().activeConnections,
    async stop() {
      await pglite.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Resolves with the promise, or rejects after `ms`: a hang fails the test instead of stalling it. */
function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) =>
      setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms).unref(),
    ),
  ])
}

async function insertCustomer(q: Pool | Client, externalId: string): Promise<string> {
  const { rows } = await q.query<{ id: string }>(
    "INSERT INTO customers (channel, tenant, external_id) VALUES ('slack', 'T1', $1) RETURNING id",
    [externalId],
  )
  return String(rows[0]?.id)
}

/**
 * Connects `client`, opens a transaction and inserts a customer in it; `errored` settles with the
 * error the client emits when its connection dies.
 */
async function inTransaction(
  client: Client,
  externalId: string,
): Promise<{ errored: Promise<Error> }> {
  await client.connect()
  const errored = new Promise<Error>((resolve) => client.on('error', resolve))
  await client.query('BEGIN')
  await insertCustomer(client, externalId)
  return { errored }
}

describe.each([
  ['real Postgres', realPostgres],
  ['embedded PGlite', embeddedPglite],
])('Neon driver through the WebSocket proxy, %s', (_name, startTarget) => {
  let target: Target
  let proxy: RunningProxy

  beforeAll(async () => {
    target = await startTarget()
    const url = new URL(target.url)
    proxy = await startNeonWsProxy({ target: { host: url.hostname, port: Number(url.port) } })
    configureNeonForLocalProxy(proxy.wsProxy)
  }, 240_000)

  afterAll(async () => {
    await proxy?.close()
    await target?.stop()
  })

  /** Customers with this external id, read by a fresh pool (bounded: `what` names the wait). */
  async function customersNamed(externalId: string, what: string): Promise<number> {
    const pool = new Pool({ connectionString: target.url, max: 1 })
    try {
      const query = 'SELECT count(*)::int AS n FROM customers WHERE external_id = $1'
      const { rows } = await within(10_000, pool.query(query, [externalId]), what)
      return rows[0]?.n
    } finally {
      await within(5_000, pool.end(), 'pool.end()')
    }
  }

  it('a Client connects, queries with parameters, and end() returns', async () => {
    const client = new Client({ connectionString: target.url })
    await within(10_000, client.connect(), 'connect')
    const { rows } = await client.query<{ sum: number; text: string }>(
      'SELECT $1::int + 1 AS sum, $2::text AS text',
      [41, 'héllo ✓'],
    )
    expect(rows).toEqual([{ sum: 42, text: 'héllo ✓' }])
    await within(5_000, client.end(), 'client.end()')
  })

  it('a Pool commits and rolls back transactions', async () => {
    const pool = new Pool({ connectionString: target.url, max: 4 })
    try {
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        await insertCustomer(client as unknown as Client, 'rolled-back')
        await client.query('ROLLBACK')
        await client.query('BEGIN')
        await insertCustomer(client as unknown as Client, 'committed')
        await client.query('COMMIT')
      } finally {
        client.release()
      }
      const { rows } = await pool.query<{ external_id: string }>(
        "SELECT external_id FROM customers WHERE external_id IN ('rolled-back', 'committed')",
      )
      expect(rows.map((r) => r.external_id)).toEqual(['committed'])
    } finally {
      await within(5_000, pool.end(), 'pool.end()')
    }
  })

  it('a unique violation arrives as 23505 with the constraint name, and poisons the transaction', async () => {
    const pool = new Pool({ connectionString: target.url, max: 2 })
    try {
      await insertCustomer(pool, 'dup-1')
      const err = (await insertCustomer(pool, 'dup-1').catch((e) => e)) as DatabaseError
      expect(err.code).toBe('23505')
      expect(err.constraint).toBe('customers_identity_key')
      expect(err.table).toBe('customers')

      // The partial index on messages, as the origin hits it.
      const customerId = await insertCustomer(pool, 'dup-2')
      const conv = await pool.query<{ id: string }>(
        "INSERT INTO conversations (customer_id, channel) VALUES ($1, 'slack') RETURNING id",
        [customerId],
      )
      const insertMessage = (q: { query: Pool['query'] }) =>
        q.query(
          `INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id,
             payload_hash, first_delivery_key, occurred_at)
           VALUES ($1, 'slack', 'T1:C1:1.0', 'U1', 'abcdef0123456789', 'Ev1', now())`,
          [conv.rows[0]?.id],
        )
      await insertMessage(pool)
      const client = await pool.connect()
      try {
        await client.query('BEGIN')
        const dup = (await insertMessage(client).catch((e) => e)) as DatabaseError
        expect(dup.code).toBe('23505')
        expect(dup.constraint).toBe('messages_channel_message_key')
        const next = (await client.query('SELECT 1').catch((e) => e)) as DatabaseError
        expect(next.code).toBe('25P02')
        await client.query('ROLLBACK')
      } finally {
        client.release()
      }
      const count = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM messages')
      expect(count.rows[0]?.n).toBe(1)
    } finally {
      await within(5_000, pool.end(), 'pool.end()')
    }
  })

  it.each([
    ['one Pool (max 20)', 'pool'],
    ['50 separate Clients', 'clients'],
  ])('50 parallel inserts of one key through %s: one row, 49 × 23505', async (_label, mode) => {
    const key = `race-${mode}`
    const pool = new Pool({ connectionString: target.url, max: 20 })
    const insertVia = async (): Promise<'ok' | string> => {
      const sql =
        "INSERT INTO customers (channel, tenant, external_id) VALUES ('telegram', 'bot', $1)"
      try {
        if (mode === 'pool') await pool.query(sql, [key])
        else {
          const client = new Client({ connectionString: target.url })
          await client.connect()
          try {
            await client.query(sql, [key])
          } finally {
            await client.end()
          }
        }
        return 'ok'
      } catch (err) {
        return (err as DatabaseError).code ?? (err as Error).message
      }
    }
    try {
      const results = await within(
        30_000,
        Promise.all(Array.from({ length: 50 }, insertVia)),
        '50 inserts',
      )
      expect(results.filter((r) => r === 'ok')).toHaveLength(1)
      expect(results.filter((r) => r === '23505')).toHaveLength(49)
      const { rows } = await pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM customers WHERE external_id = $1',
        [key],
      )
      expect(rows[0]?.n).toBe(1)
    } finally {
      await within(5_000, pool.end(), 'pool.end()')
    }
  })

  it('relays a large row intact (multi-frame messages)', async () => {
    const client = new Client({ connectionString: target.url })
    await client.connect()
    try {
      const big = 'x'.repeat(3 * 1024 * 1024)
      const { rows } = await client.query<{ len: number; tail: string }>(
        'SELECT length($1::text) AS len, right($1::text, 3) AS tail',
        [big],
      )
      expect(rows).toEqual([{ len: big.length, tail: 'xxx' }])
    } finally {
      await client.end()
    }
  })

  it('after pool.end(), no server connection is left behind', async () => {
    const before = await target.openConnections()
    const pool = new Pool({ connectionString: target.url, max: 5 })
    await Promise.all(Array.from({ length: 5 }, () => pool.query('SELECT pg_sleep(0.05)')))
    await within(5_000, pool.end(), 'pool.end()')
    const deadline = Date.now() + 5_000
    let left = await target.openConnections()
    while (left > before && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50))
      left = await target.openConnections()
    }
    expect(left).toBe(before)
  })

  it('close() ends open connections; a transaction left open is rolled back', async () => {
    const url = new URL(target.url)
    const own = await startNeonWsProxy({ target: { host: url.hostname, port: Number(url.port) } })
    // A proxy of its own; the driver's proxy setting is global, so point it here for this test.
    configureNeonForLocalProxy(own.wsProxy)
    const client = new Client({ connectionString: target.url })
    try {
      const { errored } = await inTransaction(client, 'never-committed')
      await within(5_000, own.close(), 'proxy close()')
      expect((await within(5_000, errored, 'client error event')).message).toMatch(/terminated/)
      const next = await client.query('SELECT 1').catch((e: Error) => e)
      expect(next).toBeInstanceOf(Error)
    } finally {
      configureNeonForLocalProxy(proxy.wsProxy)
      // Driver quirk (not the proxy's): after the connection died, the Neon Client's end() never
      // settles. Bound it and move on; a Pool drops such clients by itself.
      await within(500, client.end(), 'end after error').catch(() => {})
    }
    // The server noticed: the row is gone, and (on PGlite, one shared backend) nobody is blocked.
    expect(await customersNamed('never-committed', 'query after the dead transaction')).toBe(0)
  })

  it('dropConnections() cuts a transaction in flight and keeps listening: the next client gets in', async () => {
    const client = new Client({ connectionString: target.url })
    try {
      const { errored } = await inTransaction(client, 'cut-mid-transaction')
      expect(proxy.dropConnections()).toBeGreaterThan(0)
      expect((await within(5_000, errored, 'client error event')).message).toMatch(/terminated/)
    } finally {
      await within(500, client.end(), 'end after error').catch(() => {})
    }
    expect(
      await customersNamed('cut-mid-transaction', 'query through the same proxy after the cut'),
    ).toBe(0)
  })

  it('plain HTTP to the proxy is refused with 426', async () => {
    const res = await fetch(`http://127.0.0.1:${proxy.port}/v2`)
    expect(res.status).toBe(426)
  })
})
