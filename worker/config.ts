/**
 * Typed settings from the Worker's bindings. Parsed once per isolate and env object (a WeakMap:
 * workerd hands the same `env` to every request of an isolate, and a test's own env gets its own
 * entry). A missing secret disables only the channel that needs it: its route answers 503
 * `channel_not_configured` and the log names the variable; the other channels keep working.
 * @module
 */
import { type ClaimSettings, readClaimSettings } from '../claims'
import { secretList } from '../contract/crypto'
import { present, readInt, readUrl } from '../contract/settings'
import type { Env } from './env'
import { parseSpoolSettings, type SpoolSettings } from './spool/config'
import { parseTenantSecrets, type TenantIdRule, type TenantSecrets } from './tenants'

/** A channel is either ready, or names what is missing (variable names, never values). */
export type ChannelConfig<T> = { ok: true; value: T } | { ok: false; missing: string[] }

export interface SlackConfig {
  /** By `api_app_id`, or shared (SLACK_SIGNING_SECRET). */
  signingSecrets: TenantSecrets
}
export interface TwilioConfig {
  /** By `AccountSid`, or shared (TWILIO_AUTH_TOKEN). */
  authTokens: TenantSecrets
  /** The public origin Twilio calls (behind a proxy `request.url` is not what Twilio signed). */
  publicBaseUrl: string | null
}
export interface TelegramConfig {
  /** `secret_token`s by bot id (the path `/webhooks/telegram/{botId}`); always per bot. */
  secretTokens: TenantSecrets
  /** The bot of the bare path `/webhooks/telegram` (TELEGRAM_BOT_ID), if any. */
  pathlessBotId: string | null
}
export interface OriginConfig {
  url: string
  /** The first signs; a list so the secret can rotate. */
  secrets: string[]
}
/** The claim settings (claims/settings.ts: Redis, prefix, TTL, lease, the Redis and origin budgets) and the Worker's own. */
export interface Settings extends ClaimSettings {
  /** How long a replay waits for an in-flight first attempt before answering 503. @default 600 */
  inflightWaitMs: number
  /** Larger bodies get 413 before any work. @default 262144 */
  maxBodyBytes: number
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
  const int = (name: StringSetting, fallback: number, min: number, max: number): number =>
    readInt(env, name, fallback, { min, max }, warnings)
  const claims = readClaimSettings(env, warnings)
  const inflightWaitMs = int('INFLIGHT_WAIT_MS', DEFAULTS.inflightWaitMs, 0, 30_000)
  const maxBodyBytes = int('MAX_BODY_BYTES', DEFAULTS.maxBodyBytes, 1_024, 25 * 1024 * 1024)

  const originUrl = readUrl(env, 'ORIGIN_URL', warnings)
  const originSecrets = secretList(env.ORIGIN_SHARED_SECRET)
  const origin =
    originUrl && originSecrets.length > 0 ? { url: originUrl, secrets: originSecrets } : null
  const originMissing = [
    ...(originUrl ? [] : ['ORIGIN_URL']),
    ...(originSecrets.length > 0 ? [] : ['ORIGIN_SHARED_SECRET']),
  ]

  const channel = <T>(own: ChannelConfig<T>): ChannelConfig<T> => {
    const missing = [...(own.ok ? [] : own.missing), ...originMissing]
    return missing.length === 0 ? own : { ok: false, missing }
  }
  const secrets = (perTenant: StringSetting, shared: StringSetting, rule: TenantIdRule) =>
    tenantSecrets(env, perTenant, shared, rule, warnings)

  return {
    ...claims,
    inflightWaitMs,
    maxBodyBytes,
    origin,
    slack: channel(
      mapConfig(
        secrets('SLACK_SIGNING_SECRETS_BY_APP', 'SLACK_SIGNING_SECRET', SLACK_APP),
        (s) => ({
          signingSecrets: s,
        }),
      ),
    ),
    twilio: channel(
      mapConfig(
        secrets('TWILIO_AUTH_TOKENS_BY_ACCOUNT', 'TWILIO_AUTH_TOKEN', TWILIO_ACCOUNT),
        (s) => ({ authTokens: s, publicBaseUrl: readUrl(env, 'PUBLIC_BASE_URL', warnings) }),
      ),
    ),
    telegram: channel(telegramConfig(env, warnings)),
    spool: parseSpoolSettings(env, int, warnings),
    warnings,
  }
}

const SLACK_APP: TenantIdRule = {
  test: (id) => /^A[A-Z0-9]{1,31}$/.test(id),
  hint: 'a Slack app id (A…)',
}
const TWILIO_ACCOUNT: TenantIdRule = {
  test: (id) => /^AC[0-9a-fA-F]{32}$/.test(id),
  hint: 'an AccountSid (AC + 32 hex)',
}
const TELEGRAM_BOT: TenantIdRule = {
  test: (id) => TELEGRAM_BOT_ID_PATTERN.test(id),
  hint: 'a numeric bot id',
}
/** The part of a bot token before `:`. */
export const TELEGRAM_BOT_ID_PATTERN = /^\d{1,20}$/
/** What Telegram's setWebhook accepts as `secret_token`. */
const TELEGRAM_TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,256}$/

function mapConfig<A, B>(config: ChannelConfig<A>, f: (value: A) => B): ChannelConfig<B> {
  return config.ok ? { ok: true, value: f(config.value) } : config
}

/**
 * Slack / Twilio secrets: the per-tenant variable when set (the shared one is then ignored, so
 * it cannot vouch for a tenant the map does not list), else the shared variable (any tenant, as a
 * single-tenant deployment always worked). A per-tenant variable without one valid entry disables
 * the channel rather than fall back to the shared list.
 */
function tenantSecrets(
  env: Env,
  perTenant: StringSetting,
  shared: StringSetting,
  rule: TenantIdRule,
  warnings: string[],
): ChannelConfig<TenantSecrets> {
  const byTenant = parseTenantSecrets(perTenant, env[perTenant], rule, warnings)
  const sharedSecrets = secretList(env[shared])
  if (byTenant !== null) {
    if (sharedSecrets.length > 0) warnings.push(`${shared} is ignored while ${perTenant} is set`)
    return byTenant.size > 0
      ? { ok: true, value: { kind: 'per-tenant', byTenant } }
      : { ok: false, missing: [perTenant] }
  }
  return sharedSecrets.length > 0
    ? { ok: true, value: { kind: 'shared', secrets: sharedSecrets } }
    : { ok: false, missing: [`${shared} (or ${perTenant})`] }
}

/**
 * Telegram: every bot is its own tenant (the Update names no bot, so the path does). The
 * single-tenant pair TELEGRAM_SECRET_TOKEN + TELEGRAM_BOT_ID is one more bot, also served on the
 * bare path; TELEGRAM_SECRET_TOKENS_BY_BOT adds bots (its entry wins for the same bot id).
 */
function telegramConfig(env: Env, warnings: string[]): ChannelConfig<TelegramConfig> {
  const byBot =
    parseTenantSecrets(
      'TELEGRAM_SECRET_TOKENS_BY_BOT',
      env.TELEGRAM_SECRET_TOKENS_BY_BOT,
      TELEGRAM_BOT,
      warnings,
      (token) => TELEGRAM_TOKEN_PATTERN.test(token),
    ) ?? new Map<string, string[]>()
  const tokens = secretList(env.TELEGRAM_SECRET_TOKEN)
  const botId = present(env, 'TELEGRAM_BOT_ID')
  const botIdValid = botId !== null && TELEGRAM_BOT_ID_PATTERN.test(botId)
  if (botId !== null && !botIdValid) warnings.push('TELEGRAM_BOT_ID must be the numeric bot id')
  const pathlessBotId = tokens.length > 0 && botIdValid ? botId : null
  if (pathlessBotId !== null) {
    if (byBot.has(pathlessBotId)) {
      warnings.push(
        `TELEGRAM_SECRET_TOKENS_BY_BOT lists bot ${pathlessBotId} too; its entry is used`,
      )
    } else {
      byBot.set(pathlessBotId, tokens)
    }
  }
  if (byBot.size > 0) {
    return {
      ok: true,
      value: { secretTokens: { kind: 'per-tenant', byTenant: byBot }, pathlessBotId },
    }
  }
  if (env.TELEGRAM_SECRET_TOKENS_BY_BOT?.trim()) {
    return { ok: false, missing: ['TELEGRAM_SECRET_TOKENS_BY_BOT'] }
  }
  return {
    ok: false,
    missing: [
      ...(tokens.length > 0 ? [] : ['TELEGRAM_SECRET_TOKEN']),
      ...(botIdValid ? [] : ['TELEGRAM_BOT_ID']),
    ],
  }
}
