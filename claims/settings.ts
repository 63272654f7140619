/**
 * The claim settings, read the same way by both wings: the Worker and the origin's Gmail poller
 * must claim under the same keys with the same lease and TTL, so both read these variables here.
 *
 *   UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN   the Redis; unset: no claims, Postgres decides
 *   REDIS_KEY_PREFIX                                    prefix of every key
 *   DEDUP_TTL_SECONDS                                   how long `done` absorbs replays
 *   CLAIM_LEASE_MS                                      in-flight lease (raised past one attempt)
 *   REDIS_TIMEOUT_MS                                    budget of one Redis call
 *   ORIGIN_TIMEOUT_MS                                   one forward (the lease must outlive it)
 * @module
 */
import { present, readInt, readUrl, type StringEnv } from '../contract/settings'

export interface RedisConfig {
  url: string
  token: string
}

export interface ClaimSettings {
  /** Null: no Redis configured; every delivery goes to the origin and Postgres decides. */
  redis: RedisConfig | null
  redisKeyPrefix: string
  /** How long a `done` claim absorbs replays. @default 86400 (Telegram keeps updates 24 h) */
  dedupTtlSeconds: number
  /** How long an in-flight claim lives if its holder dies. Longer than one forward. @default 6000 */
  claimLeaseMs: number
  /** Budget for one Redis round trip; past it the caller fails open. @default 300 */
  redisTimeoutMs: number
  /** Budget for one POST to the origin. @default 2000 */
  originTimeoutMs: number
}

export const CLAIM_DEFAULTS = {
  dedupTtlSeconds: 86_400,
  claimLeaseMs: 6_000,
  redisTimeoutMs: 300,
  originTimeoutMs: 2_000,
} as const

export function readClaimSettings(env: StringEnv, warnings: string[]): ClaimSettings {
  const int = (name: string, fallback: number, min: number, max: number) =>
    readInt(env, name, fallback, { min, max }, warnings)
  const dedupTtlSeconds = int('DEDUP_TTL_SECONDS', CLAIM_DEFAULTS.dedupTtlSeconds, 60, 30 * 86_400)
  const originTimeoutMs = int('ORIGIN_TIMEOUT_MS', CLAIM_DEFAULTS.originTimeoutMs, 100, 60_000)
  const redisTimeoutMs = int('REDIS_TIMEOUT_MS', CLAIM_DEFAULTS.redisTimeoutMs, 20, 10_000)
  let claimLeaseMs = int('CLAIM_LEASE_MS', CLAIM_DEFAULTS.claimLeaseMs, 500, 600_000)
  // The lease must outlive one whole attempt (claim reply, forward, complete), else a replay
  // could claim and forward while the first forward is still running.
  const minimumLease = originTimeoutMs + 2 * redisTimeoutMs + 500
  if (claimLeaseMs < minimumLease) {
    warnings.push(
      `CLAIM_LEASE_MS ${claimLeaseMs} is not longer than one attempt; using ${minimumLease}`,
    )
    claimLeaseMs = minimumLease
  }
  const url = readUrl(env, 'UPSTASH_REDIS_REST_URL', warnings)
  const token = present(env, 'UPSTASH_REDIS_REST_TOKEN')
  const redis = url && token ? { url, token } : null
  if (!redis) {
    warnings.push(
      'UPSTASH_REDIS_REST_URL / UPSTASH_REDIS_REST_TOKEN not set: no Redis fast path, ' +
        'every delivery is decided by the origin (Postgres)',
    )
  }
  const prefix = (env as { REDIS_KEY_PREFIX?: unknown }).REDIS_KEY_PREFIX
  return {
    redis,
    redisKeyPrefix: typeof prefix === 'string' ? prefix : '',
    dedupTtlSeconds,
    claimLeaseMs,
    redisTimeoutMs,
    originTimeoutMs,
  }
}
