/**
 * The operator console, mounted by the origin at `/console`: server-rendered pages (Hono JSX, no
 * script), behind sign-in. Every request but the sign-in page needs a session; every POST but the
 * sign-in needs the session's CSRF token; replays need the operator role and are audited.
 * @module
 */
import { getConnInfo } from '@hono/node-server/conninfo'
import { type Context, Hono } from 'hono'
import type { ClaimStore } from '../../claims'
import { BodyOverLimitError, readBoundedBody } from '../../contract/body'
import { audit } from '../audit'
import type { Database } from '../db'
import type { ReplayCliDeps } from '../failures/cli-replay'
import type { Logger } from '../log'
import { listFailurePage, parseFilter } from './failures'
import { healthOf } from './health'
import { lookup } from './lookup'
import { listMismatches } from './mismatches'
import { overview, type Range } from './overview'
import { BulkEstimatePage, FailuresPage, JobPage } from './pages/failures'
import { LoginPage } from './pages/login'
import { LookupPage } from './pages/lookup'
import { MismatchesPage } from './pages/mismatches'
import { OverviewPage, RANGES } from './pages/overview'
import { auditedReplay, cancelJob, estimateBulkReplay, getJob, startBulkReplay } from './replays'
import {
  CSRF_FIELD,
  CSRF_HEADER,
  clearSessionCookie,
  closeSession,
  csrfMatches,
  findSession,
  matchToken,
  openSession,
  type Session,
  sessionCookie,
  setSessionCookie,
} from './session'
import type { ConsoleConfig } from './settings'
import { type SignInLimit, signInLimit } from './sign-in-limit'

export interface ConsoleDeps {
  db: Database
  config: ConsoleConfig
  /** The Worker's claim store (UPSTASH_*, REDIS_KEY_PREFIX): lookup reads claims; null: none. */
  claims: ClaimStore | null
  /** What a replay needs besides the database (DOWNSTREAM_URL, the retry policy, Gmail). */
  replay: Omit<ReplayCliDeps, 'db'>
  logger: Logger
  /** Refused sign-ins per client address. @default 10 per 5 minutes */
  signInLimit?: SignInLimit
}

/** The client's address as the socket gives it (not a header a client can set), else `unknown`. */
function clientAddress(c: Context): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

type Env = { Variables: { session: Session; form: Record<string, string> } }

/** A console form is a few fields; anything larger is refused before it is parsed. */
const MAX_FORM_BYTES = 16 * 1024
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

  app.get('/login', (c) => c.html(<LoginPage noTokens={config.tokens.length === 0} />))

  app.post('/login', async (c) => {
    // No session yet, so no CSRF token: a sign-in posted from another site is refused by origin.
    if (!sameSite(c)) return c.text('cross-site sign-in refused', 403)
    const address = clientAddress(c)
    const wait = signIns.retryAfter(address)
    if (wait > 0) {
      c.header('retry-after', String(wait))
      return c.html(<LoginPage error="Too many refused sign-ins: try again later." />, 429)
    }
    const form = await readForm(c)
    const who = matchToken(config.tokens, form.token ?? '')
    if (!who) {
      signIns.refused(address)
      logger.warn('console sign-in refused', { address })
      return c.html(<LoginPage error="That token does not sign in." />, 401)
    }
    const { id } = await openSession(db, who, config.sessionSeconds)
    await audit(db, { actor: who.name, action: 'sign_in', target: 'console', result: 'ok' })
    setSessionCookie(c, id, config.sessionSeconds)
    return c.redirect('/console', 303)
  })

  // Everything below: a session, and for a POST its CSRF token.
  app.use(async (c, next) => {
    const session = await findSession(db, sessionCookie(c), config.tokens)
    if (!session) {
      if (c.req.method === 'GET') return c.redirect('/console/login', 303)
      return c.text('sign in first', 401)
    }
    c.set('session', session)
    if (c.req.method === 'POST') {
      const form = await readForm(c)
      if (!csrfMatches(session, form[CSRF_FIELD] ?? c.req.header(CSRF_HEADER))) {
        logger.warn('console request refused: CSRF token missing or wrong', { path: c.req.path })
        return c.text('CSRF token missing or wrong', 403)
      }
      c.set('form', form)
    }
    await next()
  })

  const operatorOnly = (c: Context<Env>) =>
    c.get('session').role === 'operator' ? null : c.text('operators only', 403)

  app.post('/logout', async (c) => {
    await closeSession(db, sessionCookie(c))
    clearSessionCookie(c)
    return c.redirect('/console/login', 303)
  })

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

/**
 * The request comes from a page of this site: the browser's Sec-Fetch-Site says so, or its Origin
 * names this host. A client that sends neither (curl, a script) is not a browser being tricked.
 */
function sameSite(c: Context<Env>): boolean {
  const site = c.req.header('sec-fetch-site')
  if (site) return site === 'same-origin' || site === 'none'
  const origin = c.req.header('origin')
  if (!origin) return true
  try {
    return new URL(origin).host === (c.req.header('host') ?? new URL(c.req.url).host)
  } catch {
    return false
  }
}

/** A urlencoded form, bounded; read once per request (the CSRF check and the route share it). */
async function readForm(c: Context<Env>): Promise<Record<string, string>> {
  const known = c.get('form')
  if (known) return known
  if (!(c.req.header('content-type') ?? '').startsWith('application/x-www-form-urlencoded')) {
    return {}
  }
  let text: string
  try {
    text = (await readBoundedBody(c.req.raw, MAX_FORM_BYTES)).text
  } catch (err) {
    if (err instanceof BodyOverLimitError) return {}
    throw err
  }
  const form = Object.fromEntries(new URLSearchParams(text))
  c.set('form', form)
  return form
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
