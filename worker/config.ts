/**
 * Typed settings from the Worker's bindings, read through the rows of its settings table
 * (worker/settings.ts). Parsed once per isolate and env object (a WeakMap:
 * workerd hands the same `env` to every request of an isolate, and a test's own env gets its own
 * entry). A missing secret disables only the channel that needs it: its route answers 503
 * `channel_not_configured` and the log names the variable; the other channels keep working.
 * @module
 */
import {
  type ClaimSettings,
  readChannelTtl,
  readClaimSettings,
  type SettledMemoSettings,
} from '../claims'
import { ORIGIN_SHARED_SECRET } from '../contract/forward-signature'
import { type MailboxAliases, readMailboxAliases } from '../email/mailbox'
import { secretList } from '../shared/crypto'
import { present, rawValue, readInt, readUrl } from '../shared/settings'
import { type ChannelSettings, EVENT_CHANNELS, WEBHOOK_CHANNELS } from './channels'
import type { ChannelConfig, WebhookChannel } from './channels/types'
import type { Env } from './env'
import { settingsPerIsolate } from './per-isolate'
import {
  ADMISSION_TARGET_MS,
  ADMISSION_WAIT_MS,
  DECISION_FLUSH_SECONDS,
  INFLIGHT_WAIT_MS,
  MAX_BODY_BYTES,
  MAX_IN_FLIGHT,
  ORIGIN_URL,
  SETTLED_MEMO_ENTRIES,
  SETTLED_MEMO_SECONDS,
} from './settings'
import type { BreakerSettings } from './shed/breaker'
import { parseShedSettings } from './shed/config'
import { parseSpoolSettings, type SpoolSettings } from './spool/config'

/**
 * MAX_IN_FLIGHT (256, the ceiling; 0 = no bound), ADMISSION_TARGET_MS (100: the delay past which
 * the bound drops, worker/admission-limit.ts; 0 = the ceiling alone, and so with shedding off) and
 * ADMISSION_WAIT_MS (0: refused at once).
 */
export interface AdmissionSettings {
  maxInFlight: number
  targetMs: number
  maxWaitMs: number
}

export interface OriginConfig {
  url: string
  /** The first signs; a list so the secret can rotate. */
  secrets: string[]
}
/**
 * The claim settings (claims/settings.ts: Redis, prefix, TTL, lease, the Redis and origin
 * budgets), the Worker's own, and each webhook channel's under its name (`settings.slack`).
 */
export interface Settings extends ClaimSettings, ChannelSettings {
  /** How long a replay waits for an in-flight first attempt before answering 503. @default 600 */
  inflightWaitMs: number
  /** Larger bodies get 413 before any work. @default 262144 */
  maxBodyBytes: number
  origin: OriginConfig | null
  /**
   * EMAIL_MAILBOX_ALIASES: other addresses of our inboxes, for email keys (email/mailbox.ts).
   * Null when the setting is invalid: email is then answered with a temporary error rather than
   * keyed without the aliases the origin's Gmail path keys with (the origin refuses to start).
   */
  mailboxAliases: MailboxAliases | null
  /** Where events go when the origin cannot take them (worker/spool/). */
  spool: SpoolSettings
  /** How many requests this isolate works on at once, and how long one waits past that (worker/admission.ts). */
  admission: AdmissionSettings
  /** When a first-seen event goes straight to the spool queue (worker/shed/breaker.ts). */
  shed: BreakerSettings
  /**
   * This isolate's memo of keys it saw settled `done` (claims/memo.ts): SETTLED_MEMO_ENTRIES
   * (0 = off, the default), SETTLED_MEMO_SECONDS (60; at most the dedup TTL).
   */
  settledMemo: SettledMemoSettings
  /** Each webhook channel's dedup TTL (`DEDUP_TTL_SECONDS_{CHANNEL}`, its default, the global). */
  dedupTtlByChannel: Readonly<Record<string, number>>
  /**
   * The webhook channels this deployment uses: one of their own variables (its TTL row aside) is
   * set. /healthz counts only these: a channel nobody configured is not a degraded one.
   */
  channelsInUse: ReadonlySet<string>
  /** How often this isolate flushes its decision counts to the origin; 0 = off. @default 5 */
  decisionFlushSeconds: number
  /** Settings that were invalid and replaced by a default, for the log. */
  warnings: string[]
}

export const DEFAULTS = {
  inflightWaitMs: INFLIGHT_WAIT_MS.default,
  maxBodyBytes: MAX_BODY_BYTES.default,
} as const

/** The settings for this env, parsed on first use (warnings are logged once, then). */
export const settingsFor = settingsPerIsolate((env: Env): Settings => parseSettings(env))

/**
 * A channel's settings within the parsed ones (what its `settings` returned, with the origin's
 * needs), under its name. Settings is typed from the registry (channels/index.ts), so a channel
 * cannot name it without an import circle: it is read here, with one cast, and each entry is its
 * channel's own by construction (parseSettings).
 */
export function channelConfig<C extends WebhookChannel>(
  settings: Settings,
  channel: C,
): ReturnType<C['settings']> {
  const byName = settings as unknown as Record<C['name'], ReturnType<C['settings']>>
  return byName[channel.name as C['name']]
}

/**
 * With shedding off every forward is waited for up to ORIGIN_TIMEOUT_MS, so a request's time says
 * how slow the origin is, not how far behind the isolate: the delay target is off then, and
 * MAX_IN_FLIGHT alone bounds (a slow origin's late 2xx is kept; a 503 would not be).
 */
function admissionSettings(env: Env, shed: BreakerSettings, warnings: string[]): AdmissionSettings {
  const targetMs = readInt(env, ADMISSION_TARGET_MS, warnings)
  return {
    maxInFlight: readInt(env, MAX_IN_FLIGHT, warnings),
    targetMs: shed.tripAfter === 0 ? 0 : targetMs,
    maxWaitMs: readInt(env, ADMISSION_WAIT_MS, warnings),
  }
}

export function parseSettings(env: Env): Settings {
  const warnings: string[] = []
  const claims = readClaimSettings(env, warnings)
  const inflightWaitMs = readInt(env, INFLIGHT_WAIT_MS, warnings)
  const maxBodyBytes = readInt(env, MAX_BODY_BYTES, warnings)
  const memoEntries = readInt(env, SETTLED_MEMO_ENTRIES, warnings)
  const memoSeconds = readInt(env, SETTLED_MEMO_SECONDS, warnings)

  const originUrl = readUrl(env, ORIGIN_URL, warnings)
  const originSecrets = secretList(rawValue(env, ORIGIN_SHARED_SECRET.name))
  const origin =
    originUrl && originSecrets.length > 0 ? { url: originUrl, secrets: originSecrets } : null
  const originMissing = [
    ...(originUrl ? [] : ['ORIGIN_URL']),
    ...(originSecrets.length > 0 ? [] : ['ORIGIN_SHARED_SECRET']),
  ]

  // Every channel forwards to the origin: without it, none is ready.
  const withOrigin = <T>(own: ChannelConfig<T>): ChannelConfig<T> => {
    const missing = [...(own.ok ? [] : own.missing), ...originMissing]
    return missing.length === 0 ? own : { ok: false, missing }
  }
  // By construction each entry is its channel's own ChannelConfig (the registry's types).
  const channels = Object.fromEntries(
    WEBHOOK_CHANNELS.map((channel) => [
      channel.name,
      withOrigin<unknown>(channel.settings(env, warnings)),
    ]),
  ) as unknown as ChannelSettings
  const dedupTtlByChannel = Object.fromEntries(
    WEBHOOK_CHANNELS.map((channel) => [
      channel.name,
      readChannelTtl(env, channel.dedupTtl, claims.dedupTtlSeconds, warnings),
    ]),
  )

  const shed = parseShedSettings(env, warnings)
  return {
    ...claims,
    inflightWaitMs,
    maxBodyBytes,
    origin,
    ...channels,
    mailboxAliases: mailboxAliasesOrNull(env, warnings),
    spool: parseSpoolSettings(env, warnings, EVENT_CHANNELS),
    admission: admissionSettings(env, shed, warnings),
    shed,
    settledMemo: {
      maxEntries: memoEntries,
      maxAgeMs: 1_000 * Math.min(memoSeconds, claims.dedupTtlSeconds),
    },
    dedupTtlByChannel,
    decisionFlushSeconds: readInt(env, DECISION_FLUSH_SECONDS, warnings),
    channelsInUse: new Set(
      WEBHOOK_CHANNELS.filter((channel) =>
        channel.variables.some((row) => row !== channel.dedupTtl && present(env, row.name)),
      ).map((channel) => channel.name),
    ),
    warnings,
  }
}

/** EMAIL_MAILBOX_ALIASES, or null when it is set but invalid (its problems become warnings). */
function mailboxAliasesOrNull(env: Env, warnings: string[]): MailboxAliases | null {
  const problems: string[] = []
  const aliases = readMailboxAliases(env, problems)
  warnings.push(...problems)
  return problems.length === 0 ? aliases : null
}
