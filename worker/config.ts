/**
 * Typed settings from the Worker's bindings. Parsed once per isolate and env object (a WeakMap:
 * workerd hands the same `env` to every request of an isolate, and a test's own env gets its own
 * entry). A missing secret disables only the channel that needs it: its route answers 503
 * `channel_not_configured` and the log names the variable; the other channels keep working.
 * @module
 */
import { secretList } from '../contract/crypto'
import type { Env } from './env'
import { parseSpoolSettings, type SpoolSettings } from './spool/config'

/** A channel is either ready, or names what is missing (variable names, never values). */
export type ChannelConfig<T> = { ok: true; value: T } | { ok: false; missing: string[] }

export interface SlackConfig {
  signingSecrets: string[]
}
export interface TwilioConfig {
  authTokens: string[]
  /** The public origin Twilio calls (behind a proxy `request.url` is not what Twilio signed). */
  publicBaseUrl: string | null
}
export interface TelegramConfig {
  secretTokens: string[]
  /** Scopes `update_id`, which is unique per bot only. */
  botId: string
}
export interface OriginConfig {
  url: string
  /** The first signs; a list so the secret can rotate. */
  secrets: string[]
}
export interface RedisConfig {
  url: string
  token: string
}

export interface Settings {
  /** How long a `done` claim absorbs replays. @default 86400 (Telegram keeps updates 24 h) */
  dedupTtlSeconds: number
  /** How long an in-flight claim lives if its holder dies. Longer than one forward. @default 6000 */
  claimLeaseMs: number
  /** Budget for one POST to the origin. @default 2000 */
  originTimeoutMs: number
  /** Budget for one Redis round trip; past it the gateway fails open. @default 300 */
  redisTimeoutMs: number
  /** How long a replay waits for an in-flight first attempt before answering 503. @default 600 */
  inflightWaitMs: number
  /** Larger bodies get 413 before any work. @default 262144 */
  maxBodyBytes: number
  redisKeyPrefix: string
  /** Null: no Redis configured; every delivery goes to the origin and Postgres decides. */
  redis: RedisConfig | null
  origin: OriginConfig | null
  slack: ChannelConfig<SlackConfig>
  twilio: ChannelConfig<TwilioConfig>
  telegram: ChannelConfig<TelegramConfig>
  /** Where events go when the origin cannot take them (worker/spool/). */
  spool: SpoolSettings
  /** Settings that were invalid and replaced by a default, for the log. */
  warnings: string[]
}

export const DEFAULTS = {
  dedupTtlSeconds: 86_400,
  claimLeaseMs: 6_000,
  originTimeoutMs: 2_000,
  redisTimeoutMs: 300,
  inflightWaitMs: 600,
  maxBodyBytes: 262_144,
} as const

/** The bindings that are plain strings (vars and secrets), not queues. */
export type StringSetting = {
  [K in keyof Env]-?: NonNullable<Env[K]> extends string ? K : never
}[keyof Env]

const cache = new WeakMap<Env, Settings>()

/** The settings for this env, parsed on first use (warnings are logged once, then). */
export function settingsFor(env: Env): Settings {
  let settings = cache.get(env)
  if (!settings) {
    settings = parseSettings(env)
    for (const warning of settings.warnings) {
      console.warn(JSON.stringify({ level: 'warn', msg: 'config', warning }))
    }
    cache.set(env, settings)
  }
  return settings
}

export function parseSettings(env: Env): Settings {
  const warnings: string[] = []
  const int = (name: StringSetting, fallback: number, min: number, max: number): number => {
    const raw = present(env[name])
    if (raw === null) return fallback
    const value = Number(raw)
    if (!Number.isInteger(value) || value < min || value > max) {
      warnings.push(`${name} must be an integer in [${min}, ${max}]; using ${fallback}`)
      return fallback
    }
    return value
  }

  const dedupTtlSeconds = int('DEDUP_TTL_SECONDS', DEFAULTS.dedupTtlSeconds, 60, 30 * 86_400)
  const originTimeoutMs = int('ORIGIN_TIMEOUT_MS', DEFAULTS.originTimeoutMs, 100, 60_000)
  const redisTimeoutMs = int('REDIS_TIMEOUT_MS', DEFAULTS.redisTimeoutMs, 20, 10_000)
  const inflightWaitMs = int('INFLIGHT_WAIT_MS', DEFAULTS.inflightWaitMs, 0, 30_000)
  const maxBodyBytes = int('MAX_BODY_BYTES', DEFAULTS.maxBodyBytes, 1_024, 25 * 1024 * 1024)
  let claimLeaseMs = int('CLAIM_LEASE_MS', DEFAULTS.claimLeaseMs, 500, 600_000)
  // The lease must outlive one whole attempt (claim reply, forward, complete), else a replay
  // could claim and forward while the first forward is still running.
  const minimumLease = originTimeoutMs + 2 * redisTimeoutMs + 500
  if (claimLeaseMs < minimumLease) {
    warnings.push(
      `CLAIM_LEASE_MS ${claimLeaseMs} is not longer than one attempt; using ${minimumLease}`,
    )
    claimLeaseMs = minimumLease
  }

  const originUrl = urlSetting(env, 'ORIGIN_URL', warnings)
  const originSecrets = secretList(env.ORIGIN_SHARED_SECRET)
  const origin =
    originUrl && originSecrets.length > 0 ? { url: originUrl, secrets: originSecrets } : null
  const originMissing = [
    ...(originUrl ? [] : ['ORIGIN_URL']),
    ...(originSecrets.length > 0 ? [] : ['ORIGIN_SHARED_SECRET']),
  ]

  const redisUrl = urlSetting(env, 'UPSTASH_REDIS_REST_URL', warnings)
  const redisToken = present(env.UPSTASH_REDIS_REST_TOKEN)
  const redis = redisUrl && redisToken ? { url: redisUrl, token: redisToken } : null
  if (!redis) {
    warnings.push(
      'UPSTASH_REDIS_REST_URL / UPSTASH_REDIS_REST_TOKEN not set: no Redis fast path, ' +
        'every delivery is decided by the origin (Postgres)',
    )
  }

  const channel = <T>(own: Record<string, boolean>, value: () => T): ChannelConfig<T> => {
    const missing = [
      ...Object.entries(own)
        .filter(([, ok]) => !ok)
        .map(([name]) => name),
      ...originMissing,
    ]
    return missing.length === 0 ? { ok: true, value: value() } : { ok: false, missing }
  }

  const slackSecrets = secretList(env.SLACK_SIGNING_SECRET)
  const twilioTokens = secretList(env.TWILIO_AUTH_TOKEN)
  const telegramSecrets = secretList(env.TELEGRAM_SECRET_TOKEN)
  const botId = present(env.TELEGRAM_BOT_ID)
  const botIdValid = botId !== null && /^\d{1,20}$/.test(botId)
  if (botId !== null && !botIdValid) warnings.push('TELEGRAM_BOT_ID must be the numeric bot id')

  return {
    dedupTtlSeconds,
    claimLeaseMs,
    originTimeoutMs,
    redisTimeoutMs,
    inflightWaitMs,
    maxBodyBytes,
    redisKeyPrefix: env.REDIS_KEY_PREFIX ?? '',
    redis,
    origin,
    slack: channel({ SLACK_SIGNING_SECRET: slackSecrets.length > 0 }, () => ({
      signingSecrets: slackSecrets,
    })),
    twilio: channel({ TWILIO_AUTH_TOKEN: twilioTokens.length > 0 }, () => ({
      authTokens: twilioTokens,
      publicBaseUrl: urlSetting(env, 'PUBLIC_BASE_URL', warnings),
    })),
    telegram: channel(
      { TELEGRAM_SECRET_TOKEN: telegramSecrets.length > 0, TELEGRAM_BOT_ID: botIdValid },
      () => ({ secretTokens: telegramSecrets, botId: botId as string }),
    ),
    spool: parseSpoolSettings(env, int, warnings),
    warnings,
  }
}

function present(value: string | undefined): string | null {
  const trimmed = value?.trim()
  return trimmed ? trimmed : null
}

/** An http(s) URL without a trailing slash, or null (unset or invalid, with a warning). */
function urlSetting(env: Env, name: StringSetting, warnings: string[]): string | null {
  const raw = present(env[name])
  if (raw === null) return null
  try {
    const url = new URL(raw)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)')
    return raw.replace(/\/+$/, '')
  } catch {
    warnings.push(`${name} is not an http(s) URL; treated as unset`)
    return null
  }
}
