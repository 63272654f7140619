/**
 * `npm run bench:console`: the console's list and lookup queries at 100,000 rows. A fresh migrated
 * database on the local Postgres gets 100,000 messages and 100,000 failures (generated in SQL),
 * then each query runs 30 times through the origin's own database layer (the Neon driver through
 * the local proxy, as the console runs them); the median and p95 are printed, with the plan's
 * access path, so an index that stopped being used shows. The database is dropped at the end.
 * @module
 */
import { startNeonWsProxy } from '../local/neon-ws-proxy'
import { createTestDatabase, databasePool } from '../local/services'
import { countReplayable, listFailurePage, parseFilter } from '../origin/console/failures'
import { lookup } from '../origin/console/lookup'
import { openDatabase } from '../origin/db'
import { silentLogger } from '../origin/log'

const ROWS = 100_000
const RUNS = 30

const SEED = [
  `INSERT INTO customers (channel, tenant, external_id)
     SELECT 'slack', 'T1', 'U' || g FROM generate_series(1, 1000) g`,
  `INSERT INTO conversations (customer_id, channel) SELECT id, 'slack' FROM customers`,
  `INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id, body,
                         payload_hash, first_delivery_key, occurred_at)
     SELECT 1 + g % 1000, 'slack', 'T1:C1:' || (1700000000 + g) || '.000100', 'U1',
            'message ' || g, md5(g::text), 'dedup:slack:A1:Ev' || g, now()
       FROM generate_series(1, ${ROWS}) g`,
  `INSERT INTO channel_failures (channel, stage, delivery_key, event, error, attempts, status,
                                 source, created_at)
     SELECT (ARRAY['slack','telegram','whatsapp','email'])[1 + g % 4],
            CASE WHEN g % 10 = 0 THEN 'downstream' ELSE 'inbound' END,
            'dedup:slack:A1:EvF' || g, '{}'::jsonb, 'origin 503', 3,
            (ARRAY['dead','resolved','pending'])[1 + g % 3],
            'queue', now() - (g || ' seconds')::interval
       FROM generate_series(1, ${ROWS}) g`,
  'ANALYZE',
]

async function time(label: string, run: () => Promise<unknown>): Promise<void> {
  const ms: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now()
    await run()
    ms.push(performance.now() - started)
  }
  ms.sort((a, b) => a - b)
  const at = (q: number) =>
    (ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] as number).toFixed(1)
  console.log(`| ${label} | ${at(0.5)} | ${at(0.95)} |`)
}

async function main(): Promise<void> {
  const database = await createTestDatabase()
  const proxy = await startNeonWsProxy({ target: { host: '127.0.0.1', port: 5432 } })
  const sql = databasePool(database.url)
  const db = openDatabase(
    {
      databaseUrl: database.url,
      databaseDriver: 'neon',
      neonWsProxy: proxy.wsProxy,
      dbQueryTimeoutMs: 10_000,
      dbConnectTimeoutMs: 2_000,
      originTimeoutMs: 4_000,
    },
    2,
    silentLogger,
  )
  try {
    const seeding = performance.now()
    for (const statement of SEED) await sql.query(statement)
    console.log(
      `seeded ${ROWS} messages and ${ROWS} failures in ${((performance.now() - seeding) / 1000).toFixed(1)} s\n`,
    )
    console.log('| query (100,000 rows each) | median ms | p95 ms |\n|---|---|---|')
    const deep = (
      await sql.query<{ id: string }>(
        'SELECT (id + 50)::text AS id FROM channel_failures ORDER BY id LIMIT 1 OFFSET 50000',
      )
    ).rows[0]?.id as string
    await time('failures, first page, no filter', () => listFailurePage(db, {}))
    await time('failures, first page, channel + stage + status', () =>
      listFailurePage(db, parseFilter({ channel: 'telegram', stage: 'inbound', status: 'dead' })),
    )
    await time('failures, a page 50,000 rows deep (keyset)', () =>
      listFailurePage(db, { before: deep }),
    )
    await time('failures, last hour', () =>
      listFailurePage(db, parseFilter({ since: new Date(Date.now() - 3_600_000).toISOString() })),
    )
    await time('bulk replay estimate (count, channel)', () =>
      countReplayable(db, parseFilter({ channel: 'slack' })),
    )
    await time('lookup by Slack ts (message key suffix)', () =>
      lookup(db, null, '1700054321.000100'),
    )
    await time('lookup by Slack event_id (delivery key suffix)', () => lookup(db, null, 'Ev54321'))
    await time('lookup, nothing found', () => lookup(db, null, 'SM0000000000000000000000000000000'))
    const plan = await sql.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM messages
        WHERE reverse(channel_message_id) LIKE '001000.1234500071%' OR reverse(first_delivery_key) LIKE '12345vE%'`,
    )
    console.log(
      `\nlookup plan: ${plan.rows
        .map((r) => r['QUERY PLAN'].trim())
        .filter((l) => /Index|Scan/.test(l))
        .join('; ')}`,
    )
  } finally {
    await db.close()
    await sql.end()
    await proxy.close()
    await database.drop()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
