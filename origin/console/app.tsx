/**
 * The operator console, mounted by the origin at `/console`: server-rendered pages (Hono JSX, no
 * script), behind sign-in (a token, or Cloudflare Access: origin/console/sign-in.tsx). Every
 * request but the sign-in page needs a session; every POST but the sign-in needs the session's
 * CSRF token; replays need the operator role and are audited under who signed in.
 * @module
 */
import { type Context, Hono } from 'hono'
import type { ClaimStore } from '../../claims'
import { audit } from '../audit'
import type { Database } from '../db'
import type { ReplayServiceDeps } from '../failures/replay-service'
import type { Logger } from '../log'
import { type SignInLimit, signInLimit } from '../sign-in-limit'
import { type AccessVerifier, accessVerifier } from './access'
import { listFailurePage, parseFilter } from './failures'
import { healthOf } from './health'
import { lookup } from './lookup'
import { listMismatches } from './mismatches'
import { overview, type Range } from './overview'
import { BulkEstimatePage, FailuresPage, JobPage } from './pages/failures'
import { LookupPage } from './pages/lookup'
import { MismatchesPage } from './pages/mismatches'
import { OverviewPage, RANGES } from './pages/overview'
import { SearchPage } from './pages/search'
import { auditedReplay, cancelJob, estimateBulkReplay, getJob, startBulkReplay } from './replays'
import { parseSearch, searchMessages } from './search'
import type { ConsoleConfig } from './settings'
import { type ConsoleEnv, loginPage, sessionGate, signOut, tokenSignIn } from './sign-in'

export interface ConsoleDeps {
  db: Database
  config: ConsoleConfig
  /** The Worker's claim store (UPSTASH_*, REDIS_KEY_PREFIX): lookup reads claims; null: none. */
  claims: ClaimStore | null
  /** What a replay needs besides the database (DOWNSTREAM_URL, the retry policy, Gmail, GATEWAY_URL). */
  replay: Omit<ReplayServiceDeps, 'db'>
  logger: Logger
  /** Refused credentials per client address (shared with the origin's bearer routes). @default 10 per 5 minutes */
  signInLimit?: SignInLimit
  /** Cloudflare Access's assertions. @default verified against `config.access`, when set */
  access?: AccessVerifier | null
}

type Env = ConsoleEnv
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  // Not no-referrer: then a browser sends `Origin: null` with the sign-in form, which reads as
  // cross-site. same-origin sends nothing to other sites.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
}

export function createConsoleApp(deps: ConsoleDeps): Hono<Env> {
  const { db, config, logger } = deps
  const replayDeps = { ...deps.replay, db }
  const signIns = deps.signInLimit ?? signInLimit()
  const app = new Hono<Env>()

  app.use(async (c, next) => {
    await next()
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) c.header(name, value)
  })

  const access = deps.access ?? (config.access ? accessVerifier(config.access) : null)
  const signIn = { db, config, logger, signIns, access }
  app.get('/login', loginPage(signIn))
  app.post('/login', tokenSignIn(signIn))
  // Everything below: a session, and for a POST its CSRF token.
  app.use(sessionGate(signIn))

  const operatorOnly = (c: Context<Env>) =>
    c.get('session').role === 'operator' ? null : c.text('operators only', 403)

  app.post('/logout', signOut(db))

  app.get('/', async (c) => {
    const { range, since, until } = rangeOf(c.req.query())
    const [channels, health] = await Promise.all([
      overview(db, { since, until }),
      healthOf(db, deps.claims),
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

  app.get('/lookup', async (c) => {
    const q = c.req.query('q')
    const result = q ? await lookup(db, deps.claims, q) : null
    const relay = deps.replay.downstream !== null
    return c.html(<LookupPage session={c.get('session')} result={result} relay={relay} />)
  })

  app.get('/search', async (c) => {
    const query = parseSearch(c.req.query())
    const result = query.text ? await searchMessages(db, query) : null
    return c.html(<SearchPage session={c.get('session')} query={query} result={result} />)
  })

  app.get('/failures', async (c) => {
    const filter = parseFilter(c.req.query())
    const { rows, next } = await listFailurePage(db, filter)
    const flash = await replayFlash(c)
    return c.html(
      <FailuresPage
        session={c.get('session')}
        filter={filter}
        rows={rows}
        next={next}
        flash={flash}
      />,
    )
  })

  app.post('/failures/:id{[0-9]{1,18}}/replay', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const id = c.req.param('id')
    await auditedReplay(replayDeps, c.get('session').tokenName, id)
    return c.redirect(`/console/failures?replayed=${id}`, 303)
  })

  app.get('/bulk-replays/new', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const filter = parseFilter(c.req.query())
    const estimate = await estimateBulkReplay(db, filter)
    return c.html(<BulkEstimatePage session={c.get('session')} filter={filter} {...estimate} />)
  })

  app.post('/bulk-replays', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const filter = parseFilter(c.get('form'))
    const id = await startBulkReplay({ ...replayDeps, logger }, c.get('session').tokenName, {
      ...filter,
      status: undefined,
      before: undefined,
    })
    return c.redirect(`/console/jobs/${id}`, 303)
  })

  app.get('/jobs/:id{[0-9]{1,18}}', async (c) => {
    const job = await getJob(db, c.req.param('id'))
    if (!job) return c.notFound()
    return c.html(<JobPage session={c.get('session')} job={job} now={Date.now()} />)
  })

  app.post('/jobs/:id{[0-9]{1,18}}/cancel', async (c) => {
    const refused = operatorOnly(c)
    if (refused) return refused
    const id = c.req.param('id')
    await cancelJob(db, id)
    await audit(db, {
      actor: c.get('session').tokenName,
      action: 'bulk_replay_cancel',
      target: `job ${id}`,
      result: 'requested',
    })
    return c.redirect(`/console/jobs/${id}`, 303)
  })

  app.get('/mismatches', async (c) =>
    c.html(<MismatchesPage session={c.get('session')} rows={await listMismatches(db)} />),
  )

  return app

  /** The result line of this operator's last replay of `?replayed=` (from the audit, not the URL). */
  async function replayFlash(c: Context<Env>): Promise<string | undefined> {
    const id = c.req.query('replayed')
    if (!id || !/^\d{1,18}$/.test(id)) return undefined
    const rows = await db.query<{ result: string }>(
      `SELECT result FROM console_audit
        WHERE actor = $1 AND action = 'replay' AND target = $2 ORDER BY id DESC LIMIT 1`,
      [c.get('session').tokenName, `failure ${id}`],
    )
    return rows[0] ? `Replay of failure ${id}: ${rows[0].result}` : undefined
  }
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
