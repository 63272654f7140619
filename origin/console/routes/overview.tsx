/**
 * The console's reading pages: the overview (`/`: per channel, what was decided and by which
 * layer, and the health row), the lookup by any vendor id or key (`/lookup`) and the search of
 * message text (`/search`). Behind the session gate; viewers and operators alike.
 * @module
 */
import { Hono } from 'hono'
import type { ClaimStore } from '../../../claims'
import type { Database } from '../../db'
import { healthOf } from '../health'
import { lookup } from '../lookup'
import { overview, type Range } from '../overview'
import { LookupPage } from '../pages/lookup'
import { OverviewPage, RANGES } from '../pages/overview'
import { SearchPage } from '../pages/search'
import { parseSearch, searchMessages } from '../search'
import type { ConsoleEnv } from '../sign-in'

export interface OverviewRouteDeps {
  db: Database
  /** The Worker's claim store: the health row and the lookup read it; null: none. */
  claims: ClaimStore | null
  /** Whether a downstream is set (DOWNSTREAM_URL): the lookup offers the relay's replay. */
  relay: boolean
}

export function overviewRoutes(deps: OverviewRouteDeps): Hono<ConsoleEnv> {
  const { db, claims, relay } = deps
  const routes = new Hono<ConsoleEnv>()

  routes.get('/', async (c) => {
    const { range, since, until } = rangeOf(c.req.query())
    const [channels, health] = await Promise.all([
      overview(db, { since, until }),
      healthOf(db, claims),
    ])
    return c.html(
      <OverviewPage
        session={c.get('session')}
        channels={channels}
        health={health}
        since={since}
        until={until}
        range={range}
      />,
    )
  })

  routes.get('/lookup', async (c) => {
    const q = c.req.query('q')
    const result = q ? await lookup(db, claims, q) : null
    return c.html(<LookupPage session={c.get('session')} result={result} relay={relay} />)
  })

  routes.get('/search', async (c) => {
    const query = parseSearch(c.req.query())
    const result = query.text ? await searchMessages(db, query) : null
    return c.html(<SearchPage session={c.get('session')} query={query} result={result} />)
  })

  return routes
}

/** `?range=hour|day`, or `since` / `until` (UTC); the last hour by default. */
function rangeOf(query: Record<string, string>): Range & { range: string } {
  const now = Date.now()
  const parse = (s: string | undefined) => {
    if (!s) return null
    const d = new Date(s.length === 16 ? `${s}:00Z` : s)
    return Number.isNaN(d.getTime()) ? null : d
  }
  const since = parse(query.since)
  const until = parse(query.until)
  if (since && until && since < until) return { range: 'custom', since, until }
  const range = query.range === 'day' ? 'day' : 'hour'
  return { range, since: new Date(now - RANGES[range] * 1000), until: new Date(now + 60_000) }
}
