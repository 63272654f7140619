/**
 * The monitors' and the operator's routes of the origin: `GET /healthz` (does the database
 * answer) and `GET /metrics` (Prometheus; counters by channel and error code are for the
 * operator, not for anyone who reaches the port, so it takes OPERATOR_TOKEN behind the shared
 * limit on refused credentials). The spool's gauges are registered here, on the served registry.
 * @module
 */
import { Hono } from 'hono'
import type { ClaimStore } from '../claims'
import type { Database } from './db'
import { DatabaseUnavailableError, describeError } from './errors'
import type { Logger } from './log'
import type { OriginMetrics } from './metrics'
import { limitedOperatorAccess, type SignInLimit } from './sign-in-limit'
import { registerSpoolGauges } from './spool-metrics'

export interface OpsRouteDeps {
  db: Database
  metrics: OriginMetrics
  operatorToken: string | undefined
  signInLimit: SignInLimit
  /** The Worker's claim store, whose stats hash holds the spool's counters; null: none read. */
  claims: ClaimStore | null
  logger: Logger
}

export function opsRoutes(deps: OpsRouteDeps): Hono {
  const { db, metrics, logger } = deps
  registerSpoolGauges(metrics.registry, db, deps.claims, logger)
  const routes = new Hono()

  routes.get('/healthz', async (c) => {
    try {
      await db.ping()
      return c.json({ ok: true })
    } catch (err) {
      logger.warn('health check failed', describeError(err))
      const { code, message } = new DatabaseUnavailableError()
      return c.json({ ok: false, error: { code, message } }, 503)
    }
  })

  routes.get('/metrics', async (c) => {
    const access = limitedOperatorAccess(c, deps.operatorToken, deps.signInLimit)
    if (!access.ok) {
      if (access.status === 429) c.header('retry-after', String(access.retryAfter))
      return c.json({ error: { code: access.code, message: access.message } }, access.status)
    }
    const text = await metrics.registry.metrics()
    return c.body(text, 200, { 'content-type': metrics.registry.contentType })
  })

  return routes
}
