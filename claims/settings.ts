/**
 * The claim settings, read the same way by both wings: the Worker and the origin's Gmail poller
 * must claim under the same keys with the same lease and TTL, so both read these rows here (each
 * wing's table, worker/settings.ts and origin/settings.ts, includes {@link CLAIM_SETTINGS}).
 * @module
 */
import {
  type IntSetting,
  present,
  rawValue,
  readInt,
  readUrl,
  type StringEnv,
  setting,
} from '../shared/settings'

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

export const UPSTASH_URL = setting({
  name: 'UPSTASH_REDIS_REST_URL',
  kind: 'url',
  secret: true,
  doc: 'the Upstash REST endpoint; unset (or no token): no Redis, Postgres decides',
})
export const UPSTASH_TOKEN = setting({
  name: 'UPSTASH_REDIS_REST_TOKEN',
  kind: 'string',
  secret: true,
  doc: 'the Upstash REST token',
})
export const REDIS_KEY_PREFIX = setting({
  name: 'REDIS_KEY_PREFIX',
  kind: 'string',
  secret: false,
  default: '',
  doc: 'prefix of every key (one Redis shared by several deployments)',
})
export const DEDUP_TTL_SECONDS = setting({
  name: 'DEDUP_TTL_SECONDS',
  kind: 'int',
  secret: false,
  default: 86_400,
  min: 60,
  max: 30 * 86_400,
  doc: 'how long a done claim absorbs replays',
})
export const CLAIM_LEASE_MS = setting({
  name: 'CLAIM_LEASE_MS',
  kind: 'int',
  secret: false,
  default: 6_000,
  min: 500,
  max: 600_000,
  doc: 'in-flight lease; raised to outlive one attempt',
})
export const REDIS_TIMEOUT_MS = setting({
  name: 'REDIS_TIMEOUT_MS',
  kind: 'int',
  secret: false,
  default: 300,
  min: 20,
  max: 10_000,
  doc: 'budget of one Redis call; past it the caller fails open',
})
export const ORIGIN_TIMEOUT_MS = setting({
  name: 'ORIGIN_TIMEOUT_MS',
  kind: 'int',
  secret: false,
  default: 2_000,
  min: 100,
  max: 60_000,
  doc: 'budget of one forward to the origin (the lease must outlive it)',
})

/**
 * How long an Idempotency-Key's answer is replayed (claims/idempotency.ts): its Redis claim and
 * its Postgres row. Not a claim setting of the poller's: the Worker's API reads it.
 */
export const IDEMPOTENCY_TTL_SECONDS = setting({
  name: 'IDEMPOTENCY_TTL_SECONDS',
  kind: 'int',
  secret: false,
  default: 86_400,
  min: 60,
  max: 30 * 86_400,
  doc: "how long an Idempotency-Key's answer is replayed (Redis and Postgres)",
})

export const CLAIM_SETTINGS = [
  UPSTASH_URL,
  UPSTASH_TOKEN,
  REDIS_KEY_PREFIX,
  DEDUP_TTL_SECONDS,
  CLAIM_LEASE_MS,
  REDIS_TIMEOUT_MS,
  ORIGIN_TIMEOUT_MS,
] as const

export const CLAIM_DEFAULTS = {
  dedupTtlSeconds: DEDUP_TTL_SECONDS.default,
  claimLeaseMs: CLAIM_LEASE_MS.default,
  redisTimeoutMs: REDIS_TIMEOUT_MS.default,
  originTimeoutMs: ORIGIN_TIMEOUT_MS.default,
} as const

/** A webhook channel's own dedup TTL row (each channel declares one among its variables). */
export interface ChannelTtlSetting<N extends string = string> extends IntSetting<N> {
  /** Its vendor's redelivery horizon when longer than a day (Meta: 7 days); null: none. */
  readonly horizonSeconds: number | null
}

/**
 * The row `name` (`DEDUP_TTL_SECONDS_{CHANNEL}`) for one channel's `done` / `spooled` / recorded
 * claims. Unset, it is DEDUP_TTL_SECONDS, or the channel's horizon when that is longer (a
 * deployment that raised DEDUP_TTL_SECONDS keeps it for every channel).
 */
export function channelTtlSetting<const N extends string>(
  name: N,
  horizonSeconds: number | null = null,
): ChannelTtlSetting<N> {
  return {
    name,
    kind: 'int',
    secret: false,
    default: horizonSeconds ?? DEDUP_TTL_SECONDS.default,
    min: DEDUP_TTL_SECONDS.min,
    max: DEDUP_TTL_SECONDS.max,
    horizonSeconds,
    doc: "this channel's dedup TTL; unset: DEDUP_TTL_SECONDS or its vendor's horizon if longer",
  }
}

/** One channel's dedup TTL: its row when set, else the larger of its horizon and the global. */
export function readChannelTtl(
  env: StringEnv,
  row: ChannelTtlSetting,
  dedupTtlSeconds: number,
  warnings: string[],
): number {
  return readInt(env, row, warnings, Math.max(row.horizonSeconds ?? 0, dedupTtlSeconds))
}

export function readClaimSettings(env: StringEnv, warnings: string[]): ClaimSettings {
  const dedupTtlSeconds = readInt(env, DEDUP_TTL_SECONDS, warnings)
  const originTimeoutMs = readInt(env, ORIGIN_TIMEOUT_MS, warnings)
  const redisTimeoutMs = readInt(env, REDIS_TIMEOUT_MS, warnings)
  let claimLeaseMs = readInt(env, CLAIM_LEASE_MS, warnings)
  // The lease must outlive one whole attempt (claim reply, forward, complete), else a replay
  // could claim and forward while the first forward is still running.
  const minimumLease = originTimeoutMs + 2 * redisTimeoutMs + 500
  if (claimLeaseMs < minimumLease) {
    warnings.push(
      `CLAIM_LEASE_MS ${claimLeaseMs} is not longer than one attempt; using ${minimumLease}`,
    )
    claimLeaseMs = minimumLease
  }
  const url = readUrl(env, UPSTASH_URL, warnings)
  const token = present(env, UPSTASH_TOKEN.name)
  const redis = url && token ? { url, token } : null
  if (!redis) {
    warnings.push(
      'UPSTASH_REDIS_REST_URL / UPSTASH_REDIS_REST_TOKEN not set: no Redis fast path, ' +
        'every delivery is decided by the origin (Postgres)',
    )
  }
  // Taken as it is, spaces included: a prefix is part of every key.
  return {
    redis,
    redisKeyPrefix: rawValue(env, REDIS_KEY_PREFIX.name) ?? REDIS_KEY_PREFIX.default,
    dedupTtlSeconds,
    claimLeaseMs,
    redisTimeoutMs,
    originTimeoutMs,
  }
}
