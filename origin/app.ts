/**
 * The origin's HTTP app (Hono): the route groups, each a sub-app of its own module, mounted here,
 * and the one place errors become responses. The Worker's signed routes (events, batches, dead
 * letters, decision counts, signature bindings: origin/worker-routes.ts) verify and sign through
 * origin/forward-auth.ts; the console (origin/console/app.ts) at `/console`; the operator's
 * replay (origin/failures/http.ts); the connection registry's admin API
 * (origin/connections/http.ts); /healthz and /metrics (origin/ops-routes.ts).
 * @module
 */
import { Hono } from 'hono'
import type { KeyRing } from '../shared/envelope'
import { adminOpenApiRoutes, connectionRoutes } from './connections/http'
import { type ConsoleDeps, createConsoleApp } from './console/app'
import type { Database } from './db'
import {
  ClientGoneError,
  DatabaseUnavailableError,
  describeError,
  InternalError,
  NotFoundError,
  OriginError,
} from './errors'
import { failureReplayRoutes } from './failures/http'
import type { GatewayReplay } from './failures/unrecognized'
import { answerJson, type ForwardEnv } from './forward-auth'
import type { Logger } from './log'
import { createMetrics, type OriginMetrics } from './metrics'
import { opsRoutes } from './ops-routes'
import { type SignInLimit, signInLimit } from './sign-in-limit'
import { workerRoutes } from './worker-routes'

export interface OriginDeps {
  db: Database
  /** ORIGIN_SHARED_SECRET as a list: every entry verifies (rotation). */
  secrets: readonly string[]
  maxEventBytes: number
  /** OPERATOR_TOKEN: opens `GET /metrics` (shared/operator-token.ts); unset, it answers 404. */
  operatorToken: string | undefined
  logger: Logger
  /** @default a fresh registry per app */
  metrics?: OriginMetrics
  /** Clock in unix seconds, for the signature's freshness window. @default Date.now */
  nowSeconds?: () => number
  /** The operator console at /console (origin/console/); unset: not served. */
  console?: Omit<ConsoleDeps, 'db' | 'logger'>
  /**
   * Refused operator credentials per client address, one count for the console's sign-in,
   * `GET /metrics` and the replay route. @default the console's, else 10 per 5 minutes
   */
  signInLimit?: SignInLimit
  /** The Worker's replay route for unrecognized events (GATEWAY_URL); unset: refused. */
  gateway?: GatewayReplay | null
  /**
   * The connection registry (origin/connections/): ORIGIN_KEKS, for the admin API at
   * `/v1/admin/connections` and the console's pages. Null or unset: both answer 503.
   */
  connections?: { originKeys: KeyRing | null; now?: () => number } | null
}

export function createOriginApp(deps: OriginDeps): Hono<ForwardEnv> {
  const { db, logger, secrets, maxEventBytes, operatorToken } = deps
  const metrics = deps.metrics ?? createMetrics()
  const nowSeconds = deps.nowSeconds ?? (() => Math.floor(Date.now() / 1000))
  const guesses = deps.signInLimit ?? deps.console?.signInLimit ?? signInLimit()
  const app = new Hono<ForwardEnv>()

  app.route('/', workerRoutes({ db, logger, metrics, secrets, maxEventBytes, nowSeconds }))

  if (deps.console) {
    const connectionKeys = deps.connections?.originKeys ?? null
    app.route(
      '/console',
      createConsoleApp({ ...deps.console, db, logger, signInLimit: guesses, connectionKeys }),
    )
  }

  // The operator's replay of a dead inbound event, behind Idempotency-Key (failures/http.ts).
  app.route(
    '/v1/failures',
    failureReplayRoutes({ db, operatorToken, signInLimit: guesses, gateway: deps.gateway ?? null }),
  )

  // The connection registry's admin API (origin/connections/http.ts), behind OPERATOR_TOKEN.
  const registry = { db, originKeys: deps.connections?.originKeys ?? null, operatorToken }
  app.route(
    '/v1/admin/connections',
    connectionRoutes({ ...registry, now: deps.connections?.now, signInLimit: guesses }),
  )
  app.route('/v1/admin', adminOpenApiRoutes())

  // /healthz and /metrics; the spool's counters are read through the console's claim store.
  const claims = deps.console?.claims ?? null
  app.route('/', opsRoutes({ db, metrics, operatorToken, claims, logger, signInLimit: guesses }))

  app.notFound((c) => {
    const { code, message, status } = new NotFoundError()
    return c.json({ error: { code, message } }, status)
  })

  // The one place errors become responses (the sub-apps have no onError of their own). Unknown
  // errors are logged and answered opaquely.
  app.onError((err, c) => {
    const known = err instanceof OriginError ? err : new InternalError({ cause: err })
    if (known instanceof DatabaseUnavailableError) {
      logger.warn('database unavailable', describeError(known.cause))
    } else if (known instanceof ClientGoneError) {
      logger.info('request abandoned: the client closed it, its work stopped')
    } else if (known instanceof InternalError) {
      logger.error('request failed', describeError(err))
    }
    metrics.rejected.labels(known.code).inc()
    // A verified forward's error is its answer too: signed (answerJson), as its success would be.
    return answerJson(c, { error: { code: known.code, message: known.message } }, known.status)
  })

  return app
}
