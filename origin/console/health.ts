/**
 * The overview's health row: Postgres answers, Redis answers (through the claim store, whose
 * calls are bounded by REDIS_TIMEOUT_MS), the spool's counters, and what was spooled, retried and
 * dead-lettered in the last hour: spooled and retried from the gateway's flushed decision counts
 * (`spooled` by a front door, `retried` by the spool consumer giving an event back to its queue),
 * dead-lettered from channel_failures: those still dead (a replayed one is resolved: no trouble
 * left to look at).
 * @module
 */
import type { ClaimStore } from '../../claims'
import { SPOOL_RETRIED } from '../../contract/decision-counts'
import type { Database } from '../db'

export interface Health {
  postgres: 'ok' | 'down'
  redis: 'ok' | 'down' | 'not configured'
  /** The claim store's stats hash (spool_queued:slack, ...); null when Redis is not read. */
  queue: Record<string, number> | null
  /** Inbound dead letters of the last hour still dead (not replayed, not resolved). */
  deadLastHour: number
  spooledLastHour: number
  /** Spool retries: one per time the consumer gave an event back to the queue. */
  retriedLastHour: number
}

export async function healthOf(db: Database, claims: ClaimStore | null): Promise<Health> {
  const postgres = await db.ping().then(
    () => 'ok' as const,
    () => 'down' as const,
  )
  let redis: Health['redis'] = 'not configured'
  let queue: Health['queue'] = null
  if (claims) {
    try {
      queue = await claims.stats()
      redis = 'ok'
    } catch {
      redis = 'down'
    }
  }
  const hour = { since: new Date(Date.now() - 3_600_000), until: new Date(Date.now() + 60_000) }
  const lastHour = await db
    .query<{ spooled: string; retried: string; dead: string }>(
      `SELECT (SELECT coalesce(sum(count), 0) FROM gateway_decisions
                WHERE decision = 'spooled' AND bucket >= $1 AND bucket < $2)::text AS spooled,
              (SELECT coalesce(sum(count), 0) FROM gateway_decisions
                WHERE decision = $3 AND bucket >= $1 AND bucket < $2)::text AS retried,
              (SELECT count(*) FROM channel_failures
                WHERE stage = 'inbound' AND status = 'dead'
                  AND created_at >= $1 AND created_at < $2)::text AS dead`,
      [hour.since, hour.until, SPOOL_RETRIED],
    )
    .catch(() => [])
  return {
    postgres,
    redis,
    queue,
    spooledLastHour: Number(lastHour[0]?.spooled ?? 0),
    retriedLastHour: Number(lastHour[0]?.retried ?? 0),
    deadLastHour: Number(lastHour[0]?.dead ?? 0),
  }
}
