/**
 * The operator console, mounted by the origin at `/console`: server-rendered pages (Hono JSX, no
 * script), behind sign-in (a token, or Cloudflare Access: origin/console/sign-in.tsx). Its route
 * groups are sub-apps (origin/console/routes/), mounted here in the order that keeps them safe:
 * the security headers on every answer, the sign-in routes, then the session gate (every request
 * below needs a session; every POST, the session's CSRF token, checked before its form is used),
 * then the pages. Replays need the operator role and are audited under who signed in.
 * @module
 */
import { Hono } from 'hono'
import type { ClaimStore } from '../../claims'
import type { KeyRing } from '../../shared/envelope'
import type { Database } from '../db'
import type { ReplayServiceDeps } from '../failures/replay-service'
import type { Logger } from '../log'
import { type SignInLimit, signInLimit } from '../sign-in-limit'
import { type AccessVerifier, accessVerifier } from './access'
import { consoleHeaders } from './headers'
import { connectionRoutes } from './routes/connections'
import { failureRoutes } from './routes/failures'
import { jobRoutes } from './routes/jobs'
import { mismatchRoutes } from './routes/mismatches'
import { overviewRoutes } from './routes/overview'
import { signInRoutes, signOutRoutes } from './routes/sign-in'
import type { ConsoleConfig } from './settings'
import { type ConsoleEnv, sessionGate } from './sign-in'

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
  /**
   * ORIGIN_KEKS, for the connection pages: they call origin/connections/service.ts with
   * `{ db, originKeys: connectionKeys ?? null }`. Null or unset: the registry is off (503).
   */
  connectionKeys?: KeyRing | null
}

export function createConsoleApp(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const { db, config, logger, claims } = deps
  const signIns = deps.signInLimit ?? signInLimit()
  const access = deps.access ?? (config.access ? accessVerifier(config.access) : null)
  const signIn = { db, config, logger, signIns, access }
  const app = new Hono<ConsoleEnv>()

  app.use(...consoleHeaders)

  app.route('/', signInRoutes(signIn))
  // Everything below: a session, and for a POST its CSRF token. A sub-app mounted below adds no
  // middleware of its own (a sub-app's `use` would run for every route mounted after it).
  app.use(sessionGate(signIn))
  app.route('/', signOutRoutes(db))
  app.route('/', overviewRoutes({ db, claims, relay: deps.replay.downstream !== null }))
  app.route('/', failureRoutes({ db, logger, replay: deps.replay }))
  app.route('/', jobRoutes(db))
  app.route('/', mismatchRoutes(db))
  app.route('/', connectionRoutes({ db, originKeys: deps.connectionKeys ?? null }))

  return app
}
