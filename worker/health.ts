/**
 * `GET /healthz`: which channels are configured and whether Redis answers within its budget. No
 * secrets, no variable names, no URLs. Always 200 while the Worker runs: without Redis it still
 * serves (fail open), so a Redis outage is `degraded`, not down.
 * @module
 */
import type { Settings } from './config'
import { claimStoreFor } from './gateway'
import { spoolStoreFor } from './spool/index'
import type { SpoolDepth } from './spool/store'

export interface Health {
  status: 'ok' | 'degraded'
  channels: { slack: boolean; twilio: boolean; telegram: boolean }
  origin: boolean
  redis: 'ok' | 'unavailable' | 'not_configured'
  redisMs?: number
  /** Events waiting in the spool for the origin, and dead ones; absent when Redis is not there. */
  spool?: SpoolDepth
}

export async function health(settings: Settings): Promise<Health> {
  const channels = {
    slack: settings.slack.ok,
    twilio: settings.twilio.ok,
    telegram: settings.telegram.ok,
  }
  const store = claimStoreFor(settings)
  let redis: Health['redis'] = 'not_configured'
  let redisMs: number | undefined
  if (store) {
    const started = Date.now()
    redis = await store.ping().then(
      () => 'ok' as const,
      () => 'unavailable' as const,
    )
    redisMs = Date.now() - started
  }
  const spool =
    redis === 'ok'
      ? await spoolStoreFor(settings)
          ?.depth()
          .catch(() => undefined)
      : undefined
  const allConfigured = Object.values(channels).every(Boolean) && settings.origin !== null
  return {
    status: redis === 'ok' && allConfigured ? 'ok' : 'degraded',
    channels,
    origin: settings.origin !== null,
    redis,
    ...(redisMs === undefined ? {} : { redisMs }),
    ...(spool === undefined ? {} : { spool }),
  }
}
