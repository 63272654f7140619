/**
 * The Neon proxy's statement count (local/pg-wire-tally.ts): the real `@neondatabase/serverless`
 * driver through the proxy against a fresh database on the real Postgres (parameterized queries,
 * named prepared statements run again, transactions, a simple query of two statements, a
 * parameter of megabytes spread over many frames), and the same bytes cut at every offset.
 */
import { Client, Pool } from '@neondatabase/serverless'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { configureNeonForLocalProxy } from '../../local/neon-local'
import { type RunningProxy, startNeonWsProxy } from '../../local/neon-ws-proxy'
import { statementLabel, WireTally } from '../../local/pg-wire-tally'
import { createTestDatabase, type TestDatabase } from '../../local/services'

describe('statements counted through the Neon proxy, real Postgres', () => {
  let db: TestDatabase
  let proxy: RunningProxy

  beforeAll(async () => {
    db = await createTestDatabase()
    const url = new URL(db.url)
    proxy = await startNeonWsProxy({ target: { host: url.hostname, port: Number(url.port) } })
    configureNeonForLocalProxy(proxy.wsProxy)
  }, 240_000)

  afterAll(async () => {
    await proxy?.close()
    await db?.drop()
  })

  /** What `run` sent, as counts by label. */
  async function counted(run: () => Promise<void>): Promise<Record<string, number>> {
    const before = proxy.statementCounts()
    await run()
    const after = proxy.statementCounts()
    return Object.fromEntries(
      Object.entries(after)
        .map(([label, n]) => [label, n - (before[label] ?? 0)] as const)
        .filter(([, n]) => n > 0),
    )
  }

  it('each statement once: extended protocol, a named statement run three times, a transaction', async () => {
    const pool = new Pool({ connectionString: db.url, max: 2 })
    try {
      await pool.query('SELECT 1') // the pool's connection, opened outside the count
      const counts = await counted(async () => {
        await pool.query('SELECT $1::int + 1 AS n FROM generate_series(1, 1)', [41])
        for (let i = 0; i < 3; i++) {
          await pool.query({ name: 'count_customers', text: 'SELECT count(*) FROM customers' })
        }
        const client = await pool.connect()
        try {
          await client.query('BEGIN; SET LOCAL statement_timeout = 5000')
          await client.query(
            "INSERT INTO customers (channel, tenant, external_id) VALUES ('slack', 'T1', $1)",
            ['U-tally'],
          )
          await client.query('COMMIT')
        } finally {
          client.release()
        }
      })
      expect(counts).toEqual({
        'SELECT generate_series': 1,
        'SELECT customers': 3,
        BEGIN: 1,
        SET: 1,
        'INSERT customers': 1,
        COMMIT: 1,
      })
    } finally {
      await pool.end()
    }
  })

  it('a parameter of 3 MB (many frames) is one statement, and the next is still counted', async () => {
    const client = new Client({ connectionString: db.url })
    await client.connect()
    try {
      const big = 'x'.repeat(3 * 1024 * 1024)
      const counts = await counted(async () => {
        const { rows } = await client.query<{ n: number }>('SELECT length($1::text) AS n', [big])
        expect(rows[0]?.n).toBe(big.length)
        await client.query('SELECT now()')
      })
      expect(counts).toEqual({ SELECT: 2 })
    } finally {
      await client.end()
    }
  })
})

/** A frontend message: type, int32 length (itself included), body. */
function message(type: string, ...parts: Array<string | Buffer>): Buffer {
  const body = Buffer.concat(
    parts.map((p) => (typeof p === 'string' ? Buffer.from(`${p}\0`, 'utf8') : p)),
  )
  const head = Buffer.alloc(5)
  head.write(type, 0, 'latin1')
  head.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([head, body])
}

function untyped(code: number, rest = Buffer.alloc(0)): Buffer {
  const out = Buffer.alloc(8 + rest.length)
  out.writeInt32BE(out.length, 0)
  out.writeInt32BE(code, 4)
  rest.copy(out, 8)
  return out
}

describe('WireTally on bytes cut anywhere', () => {
  const stream = Buffer.concat([
    untyped(80877103), // SSLRequest: the startup message comes next, untyped too
    untyped(196608, Buffer.from('user\0postgres\0\0')),
    message('p', 'password'),
    message('P', 'ingest_v1', 'SELECT * FROM ingest_message($1)', Buffer.alloc(2)),
    message('B', '', 'ingest_v1', Buffer.alloc(4096, 7)),
    message('D', Buffer.from('P\0')),
    message('E', '', Buffer.alloc(4)),
    message('S'),
    message('B', '', 'ingest_v1', Buffer.alloc(10)),
    message('E', '', Buffer.alloc(4)),
    message('Q', 'BEGIN; INSERT INTO outbox VALUES (1); COMMIT;'),
  ])
  const expected = { 'SELECT ingest_message': 2, BEGIN: 1, 'INSERT outbox': 1, COMMIT: 1 }

  it('whole, byte by byte, and in two pieces at every offset: the same counts', () => {
    const run = (pieces: Buffer[]) => {
      const counts = new Map<string, number>()
      const tally = new WireTally(counts)
      for (const piece of pieces) tally.push(piece)
      return Object.fromEntries(counts)
    }
    expect(run([stream])).toEqual(expected)
    expect(run([...stream].map((b) => Buffer.from([b])))).toEqual(expected)
    for (let cut = 1; cut < stream.length; cut++) {
      expect(run([stream.subarray(0, cut), stream.subarray(cut)])).toEqual(expected)
    }
  })

  it('labels: keyword and the table or function it names', () => {
    expect(statementLabel('  select a from  public.messages where id = 1')).toBe(
      'SELECT public.messages',
    )
    expect(statementLabel('INSERT INTO gateway_decisions AS g (x) VALUES (1)')).toBe(
      'INSERT gateway_decisions',
    )
    expect(statementLabel('UPDATE outbox SET done = true')).toBe('UPDATE outbox')
    expect(statementLabel('SET statement_timeout = 5000')).toBe('SET')
    expect(statementLabel('commit')).toBe('COMMIT')
  })
})
