/**
 * Wiring of the spool: one store per isolate and settings for the webhook path (Redis calls
 * bounded by REDIS_TIMEOUT_MS, like the claims), and the cron trigger's drain run (its own
 * client with a longer per-call bound: it reads batches of whole entries, and no vendor waits).
 * @module
 */
import type { Settings } from '../config'
import { settingsFor } from '../config'
import { upstashPort } from '../dedup/redis'
import type { Env } from '../env'
import { describeError, logProblem } from '../log'
import { type DrainReport, drainSpool } from './drain'
import { SpoolStore } from './store'

/** Per Redis call of the drain. Well inside the run's budget; nobody is waiting on it. */
const DRAIN_REDIS_TIMEOUT_MS = 5_000

const stores = new WeakMap<Settings, SpoolStore>()

/** The webhook path's store, or null without Redis (then nothing can be spooled). */
export function spoolStoreFor(settings: Settings): SpoolStore | null {
  if (!settings.redis) return null
  let store = stores.get(settings)
  if (!store) {
    store = new SpoolStore(
      upstashPort(settings.redis, settings.redisTimeoutMs),
      settings.redisKeyPrefix,
    )
    stores.set(settings, store)
  }
  return store
}

/**
 * One drain run, for `scheduled()`. Logs one summary line (`spool_drain`) with the counts; a run
 * without Redis or origin configured logs why and does nothing.
 */
export async function runSpoolDrain(env: Env): Promise<DrainReport | null> {
  const settings = settingsFor(env)
  if (!settings.redis || !settings.origin) {
    logProblem('warn', 'spool_drain_skipped', {
      reason: settings.redis ? 'origin not configured' : 'redis not configured',
    })
    return null
  }
  const store = new SpoolStore(
    upstashPort(settings.redis, Math.max(settings.redisTimeoutMs, DRAIN_REDIS_TIMEOUT_MS)),
    settings.redisKeyPrefix,
  )
  let report: DrainReport
  try {
    report = await drainSpool({
      store,
      origin: settings.origin,
      spool: settings.spool,
      dedupTtlSeconds: settings.dedupTtlSeconds,
      originTimeoutMs: settings.originTimeoutMs,
    })
  } catch (err) {
    // Only the lock call can throw out of drainSpool: Redis is unreachable, nothing was drained.
    logProblem('error', 'spool_drain_failed', { error: describeError(err) })
    return null
  }
  const level = report.dead > 0 || report.stoppedBy === 'redis_error' ? 'error' : 'info'
  console.log(
    JSON.stringify({
      level,
      msg: 'spool_drain',
      status: report.status,
      forwarded: report.forwarded,
      duplicates: report.duplicates,
      dead: report.dead,
      originFailed: report.originFailed.join(',') || undefined,
      stoppedBy: report.stoppedBy,
      ms: report.ms,
    }),
  )
  return report
}
