/**
 * `npm run bench:console`: the console's list, lookup and search queries. A fresh migrated
 * database on the local Postgres gets 1,000,000 messages over 30 days (texts of a few words from a
 * 20-word vocabulary plus an order number each) and 100,000 failures (generated in SQL); the
 * search's two indexes are built after the rows, CONCURRENTLY, as their migrations build them on
 * a live table, their build times and their cost per stored row printed. Then each query runs 30
 * times through the origin's own
 * database layer (the Neon driver through the local proxy, as the console runs them); the median
 * and p95 are printed, with the plans' access paths, so an index that stopped being used shows.
 * The database is dropped at the end.
 * @module
 */
import { startNeonWsProxy } from '../local/neon-ws-proxy'
import { createTestDatabase, databasePool } from '../local/services'
import { countReplayable, listFailurePage, parseFilter } from '../origin/console/failures'
import { lookup } from '../origin/console/lookup'
import { searchMessages } from '../origin/console/search'
import { openDatabase } from '../origin/db'
import { silentLogger } from '../origin/log'

const MESSAGES = 1_000_000
const FAILURES = 100_000
const RUNS = 30
/** The messages' 30 days: one stored every 2.592 s. */
const SPACING_S = (30 * 86_400) / MESSAGES
const WORDS = [
  'refund',
  'delivery',
  'invoice',
  'password',
  'shipping',
  'cancel',
  'broken',
  'login',
  'payment',
  'address',
  'tracking',
  'discount',
  'warranty',
  'return',
  'upgrade',
  'subscription',
  'receipt',
  'exchange',
  'damaged',
  'missing',
]

const SEED = [
  `INSERT INTO customers (channel, tenant, external_id)
     SELECT 'slack', 'T1', 'U' || g FROM generate_series(1, 1000) g`,
  `INSERT INTO conversations (customer_id, channel) SELECT id, 'slack' FROM customers`,
  // The search's indexes are built after the rows, as their migrations build them on a live table.
  'DROP INDEX messages_body_trgm_idx',
  'DROP INDEX messages_created_idx',
  `INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id, body,
                         payload_hash, first_delivery_key, occurred_at, created_at)
     SELECT 1 + g % 1000, 'slack', 'T1:C1:' || (1700000000 + g) || '.000100', 'U1',
            initcap(w[1 + g % 20]) || ' ' || w[1 + (g / 20) % 20] || ' and ' || w[1 + (g / 400) % 20]
              || ', order ORD-' || lpad(g::text, 7, '0'),
            md5(g::text), 'dedup:slack:A1:Ev' || g, t, t
       FROM generate_series(1, ${MESSAGES}) g,
            LATERAL (SELECT now() - make_interval(secs => g * ${SPACING_S}) AS t) at,
            (SELECT ARRAY['${WORDS.join("','")}'] AS w) words`,
  `INSERT INTO channel_failures (channel, stage, delivery_key, event, error, attempts, status,
                                 source, created_at)
     SELECT (ARRAY['slack','telegram','whatsapp','email'])[1 + g % 4],
            CASE WHEN g % 10 = 0 THEN 'downstream' ELSE 'inbound' END,
            'dedup:slack:A1:EvF' || g, '{}'::jsonb, 'origin 503', 3,
            (ARRAY['dead','resolved','pending'])[1 + g % 3],
            'queue', now() - (g || ' seconds')::interval
       FROM generate_series(1, ${FAILURES}) g`,
]

/** The search's indexes as migrations 20261203003004 and 20261203003005 build them. */
const BUILD_SEARCH_INDEXES = [
  'CREATE INDEX CONCURRENTLY messages_body_trgm_idx ON messages USING gin (body gin_trgm_ops)',
  'CREATE INDEX CONCURRENTLY messages_created_idx ON messages (created_at, id)',
]

/**
 * What the search's two indexes add to each stored message: the same rows inserted into a table
 * without them and one with them, in rounds of {@link PROBE_ROWS} per statement, alternating.
 */
const PROBE_ROWS = 20_000
const PROBE_ROUNDS = 5
const PROBE_TABLES = [
  'CREATE TABLE probe_plain (id bigint, body text, created_at timestamptz)',
  'CREATE TABLE probe_indexed (id bigint, body text, created_at timestamptz)',
  'CREATE INDEX ON probe_indexed USING gin (body gin_trgm_ops)',
  'CREATE INDEX ON probe_indexed (created_at, id)',
]
const probeInsert = (table: string, round: number) =>
  `INSERT INTO ${table} (id, body, created_at)
     SELECT g, initcap(w[1 + g % 20]) || ' ' || w[1 + (g / 20) % 20] || ', ref ' || md5(g::text), now()
       FROM generate_series(${round * PROBE_ROWS}, ${(round + 1) * PROBE_ROWS - 1}) g,
            (SELECT ARRAY['${WORDS.join("','")}'] AS w) words`

/** The median over rounds of (µs per row with the indexes) − (µs per row without them). */
async function indexCostPerRow(sql: ReturnType<typeof databasePool>): Promise<string> {
  for (const statement of PROBE_TABLES) await sql.query(statement)
  const perRow = async (table: string, round: number) => {
    const started = performance.now()
    await sql.query(probeInsert(table, round))
    return ((performance.now() - started) * 1000) / PROBE_ROWS
  }
  const plain: number[] = []
  const indexed: number[] = []
  for (let round = 0; round < PROBE_ROUNDS; round++) {
    plain.push(await perRow('probe_plain', round))
    indexed.push(await perRow('probe_indexed', round))
  }
  await sql.query('DROP TABLE probe_plain, probe_indexed')
  const median = (xs: number[]) =>
    [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
  return `${median(indexed).toFixed(1)} µs a row with them, ${median(plain).toFixed(1)} µs without (median of ${PROBE_ROUNDS} rounds of ${PROBE_ROWS.toLocaleString('en')} rows in one statement, alternating)`
}

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
    const seconds = (from: number) => ((performance.now() - from) / 1000).toFixed(1)
    console.log(`seeded ${MESSAGES} messages and ${FAILURES} failures in ${seconds(seeding)} s`)
    for (const statement of BUILD_SEARCH_INDEXES) {
      const building = performance.now()
      await sql.query(statement)
      console.log(`${statement.split(' ON ')[0]}: ${seconds(building)} s`)
    }
    console.log(`their cost per stored message: ${await indexCostPerRow(sql)}`)
    await sql.query('ANALYZE')
    console.log(
      `\n| query (${MESSAGES.toLocaleString('en')} messages, ${FAILURES.toLocaleString('en')} failures) | median ms | p95 ms |\n|---|---|---|`,
    )
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
    const hours = (h: number) => ({
      since: new Date(Date.now() - h * 3_600_000),
      until: new Date(),
    })
    const searches: [string, string, { since: Date; until: Date }][] = [
      ['search, one order number, 30 days', 'ORD-0543210', hours(720)],
      ['search, a two-word phrase (1 in 400), 30 days', 'broken and login', hours(720)],
      ['search, a common word (15 %), last hour', 'refund', hours(1)],
      ['search, a common word (15 %), 30 days', 'refund', hours(720)],
      ['search, a word in no message, 30 days', 'zebra', hours(720)],
    ]
    for (const [label, text, range] of searches) {
      await time(label, async () => {
        const result = await searchMessages(db, { text, ...range })
        if (!result.ok) throw new Error(`${label}: ${result.reason}`)
      })
    }
    const plan = await sql.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN SELECT id FROM messages
        WHERE reverse(channel_message_id) LIKE '001000.1234500071%' OR reverse(first_delivery_key) LIKE '12345vE%'`,
    )
    const paths = (rows: { 'QUERY PLAN': string }[]) =>
      rows
        .map((r) => r['QUERY PLAN'].trim())
        .filter((l) => /Index|Scan/.test(l))
        .join('; ')
    console.log(`\nlookup plan: ${paths(plan.rows)}`)
    for (const [label, text] of [
      ['rare', 'ORD-0543210'],
      ['common', 'refund'],
    ]) {
      const searchPlan = await sql.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN SELECT id FROM messages WHERE body ILIKE $1
            AND created_at >= now() - interval '30 days' AND created_at < now()
          ORDER BY created_at DESC, id DESC LIMIT 51`,
        [`%${text}%`],
      )
      console.log(`search plan (${label}): ${paths(searchPlan.rows)}`)
    }
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
