/**
 * The console's search by content (origin/console/search.ts) against real Postgres, messages
 * stored through the origin's own ingest: a phrase anywhere in the text, any case, `%` and `_`
 * taken literally, only within the time range, newest first, at most 50 with "more"; the trigram
 * index serves the query; a search that outlives its statement timeout says "narrow it" (here: a
 * lock held on messages); too short a phrase is refused before any query.
 */
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { containsPattern, SEARCH_LIMIT, snippetOf } from '../../../origin/console/search'
import { openDatabase } from '../../../origin/db'
import { silentLogger } from '../../../origin/log'
import { mountedConsole } from '../../support/console-app'
import { fileTestbed, forFile } from '../../support/for-file'
import { eventFixture, TEST_DATABASE_DRIVER } from '../../support/origin'

const TOKEN = 'search-test-operator-token'
const BASE = 'http://console.test/console'
const tb = fileTestbed()
const ui = forFile(
  async () => {
    const db = openDatabase(
      {
        databaseUrl: tb.databaseUrl,
        databaseDriver: TEST_DATABASE_DRIVER,
        neonWsProxy: tb.wsProxy,
        dbQueryTimeoutMs: 10_000,
        dbConnectTimeoutMs: 2_000,
        originTimeoutMs: 4_000,
      },
      4,
      silentLogger,
    )
    const app = mountedConsole({
      db,
      logger: silentLogger,
      config: { tokens: [{ name: 'ops', role: 'operator', token: TOKEN }], sessionSeconds: 3600 },
    })
    const signedIn = await app.request(`${BASE}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: TOKEN }),
    })
    const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0] as string
    return { app, db, cookie }
  },
  async ({ db }) => db.close(),
)

async function store(body: string): Promise<string> {
  const { status, body: result } = await tb.post(await eventFixture({ body }))
  expect(status).toBe(201)
  return String(result.messageId)
}

/** The ids the search page lists, in its order, and the page itself. */
async function search(params: Record<string, string>): Promise<{ ids: string[]; page: string }> {
  const res = await ui.app.request(`${BASE}/search?${new URLSearchParams(params)}`, {
    headers: { cookie: ui.cookie },
  })
  expect(res.status).toBe(200)
  const page = await res.text()
  const ids = [...page.matchAll(/<tr data-message-id="(\d+)"/g)].map((m) => m[1] as string)
  return { ids, page }
}

describe('search by content', () => {
  it('finds a phrase anywhere in the text, in any case, newest first; others are not listed', async () => {
    const tag = `parcel-${crypto.randomUUID().slice(0, 8)}`
    const first = await store(`Where is my ${tag}? It was due Monday.`)
    const second = await store(`${tag.toUpperCase()} arrived damaged`)
    await store('nothing to see here')
    const { ids, page } = await search({ q: tag })
    expect(ids).toEqual([second, first])
    expect(page).toContain(`Where is my ${tag}? It was due Monday.`)
  })

  it('% and _ in the phrase are literal; markup in a body stays text', async () => {
    const tag = crypto.randomUUID().slice(0, 8)
    const literal = await store(`${tag} 50%_off <script>alert(1)</script>`)
    await store(`${tag} 50 percent off`)
    await store(`${tag} 50xxoff`)
    const { ids, page } = await search({ q: `${tag} 50%_off` })
    expect(ids).toEqual([literal])
    expect(page).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(page).not.toContain('<script>alert(1)')
  })

  it('only within the time range it is given', async () => {
    const tag = `range-${crypto.randomUUID().slice(0, 8)}`
    const old = await store(`${tag} from last month`)
    await tb.sql.query(
      `UPDATE messages SET created_at = now() - interval '30 days' WHERE id = $1`,
      [old],
    )
    const recent = await store(`${tag} from today`)
    expect((await search({ q: tag })).ids).toEqual([recent])
    const month = new Date(Date.now() - 40 * 86_400_000).toISOString().slice(0, 16)
    const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 16)
    expect((await search({ q: tag, since: month, until: weekAgo })).ids).toEqual([old])
  })

  it(`at most ${SEARCH_LIMIT} rows, and it says there are more`, async () => {
    const tag = `many-${crypto.randomUUID().slice(0, 8)}`
    for (let i = 0; i < SEARCH_LIMIT + 2; i++) await store(`${tag} number ${i}`)
    const { ids, page } = await search({ q: tag })
    expect(ids).toHaveLength(SEARCH_LIMIT)
    expect(page).toContain(`More than ${SEARCH_LIMIT} match`)
  })

  it('too short a phrase is refused with a reason; no phrase: only the form', async () => {
    expect((await search({ q: 'ab' })).page).toContain('Search for 3 characters or more.')
    const { page } = await search({})
    expect(page).not.toContain('role="alert"')
    expect(page).toContain('name="q"')
  })

  it('its indexes serve it: trigrams for the phrase, the time of storing for the range in order', async () => {
    const client = new pg.Client({ connectionString: tb.databaseUrl })
    await client.connect()
    const plan = async (sql: string, values: unknown[] = []) =>
      (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, values)).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n')
    try {
      // The table here is small: without this the planner reads it whole, whatever the indexes.
      await client.query('SET enable_seqscan = off')
      expect(
        await plan(`SELECT id FROM messages WHERE body ILIKE $1 ESCAPE '\\'`, [
          containsPattern('parcel'),
        ]),
      ).toContain('messages_body_trgm_idx')
      expect(
        await plan(`SELECT id FROM messages
                     WHERE created_at >= now() - interval '7 days' AND created_at < now()
                     ORDER BY created_at DESC, id DESC LIMIT 51`),
      ).toContain('messages_created_idx')
    } finally {
      await client.end()
    }
  })

  it('a search that outlives its statement timeout says to narrow it, and frees its connection', async () => {
    const blocker = new pg.Client({ connectionString: tb.databaseUrl })
    await blocker.connect()
    try {
      await blocker.query('BEGIN')
      await blocker.query('LOCK TABLE messages IN ACCESS EXCLUSIVE MODE')
      const { page } = await search({ q: 'anything at all' })
      expect(page).toContain(
        'The search took longer than 2 s: narrow the time range or the phrase.',
      )
    } finally {
      await blocker.query('ROLLBACK')
      await blocker.end()
    }
    expect((await search({ q: 'anything at all' })).page).toContain('No message in this range')
  })
})

describe('snippets of long bodies', () => {
  it('the part around the first match, marked where it was cut, never half an emoji', () => {
    const body = `${'x'.repeat(1000)}the needle${'y'.repeat(1000)}`
    const snippet = snippetOf(body, 'NEEDLE')
    expect(snippet.startsWith('…')).toBe(true)
    expect(snippet.endsWith('…')).toBe(true)
    expect(snippet).toContain('the needle')
    // The cut falls on an even and on an odd place of a run of emoji (two UTF-16 units each).
    const lone = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
    for (const around of [`${'😀'.repeat(300)}needle`, `${'😀'.repeat(300)}bneedle`]) {
      const cut = snippetOf(`${around}${'😀'.repeat(300)}`, 'needle')
      expect(cut).toContain('needle')
      expect(lone.test(cut)).toBe(false)
    }
    expect(snippetOf('short body', 'body')).toBe('short body')
  })
})
