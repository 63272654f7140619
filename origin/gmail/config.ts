/**
 * The Gmail poller's settings, from the origin's environment. Off when none of the four required
 * GMAIL_* variables is set; a partial set is a configuration error naming what is missing (a
 * poller that silently does nothing would look like "no email" for days).
 *
 * The Redis fast path reads the claim settings with the Worker's own reader (claims/settings.ts:
 * UPSTASH_REDIS_REST_URL / _TOKEN, REDIS_KEY_PREFIX, DEDUP_TTL_SECONDS, CLAIM_LEASE_MS,
 * REDIS_TIMEOUT_MS): the poller must claim under exactly the worker's keys, so both read the same
 * variables the same way. Without Redis the poller goes straight to the Postgres backstop.
 * @module
 */

import { type ClaimSettings, readClaimSettings } from '../../claims'
import { normalizeMailbox } from '../../contract/email-keys'
import { ConfigError, type OriginEnv } from '../config'

export interface GmailConfig {
  /** `GMAIL_CLIENT_ID`: the OAuth client the refresh token was issued to. */
  clientId: string
  /** `GMAIL_CLIENT_SECRET` */
  clientSecret: string
  /** `GMAIL_REFRESH_TOKEN`: offline access, scope gmail.readonly (or gmail.modify). */
  refreshToken: string
  /** `GMAIL_MAILBOX`: the polled address, lowercased; the key scope (= the worker's RCPT TO). */
  mailbox: string
  /** `GMAIL_POLL_INTERVAL_MS`: pause between the end of one poll and the next. @default 30000 */
  pollIntervalMs: number
  /** `GMAIL_OAUTH_TOKEN_URL` @default 'https://oauth2.googleapis.com/token' */
  tokenUrl: string
  /** `GMAIL_API_BASE_URL`, no trailing slash. @default 'https://gmail.googleapis.com' */
  apiBaseUrl: string
}

/** The claim settings as the Worker reads them, and the warnings about them. */
export interface GmailRedisSettings extends ClaimSettings {
  warnings: string[]
}

export const GMAIL_DEFAULTS = {
  pollIntervalMs: 30_000,
  tokenUrl: 'https://oauth2.googleapis.com/token',
  apiBaseUrl: 'https://gmail.googleapis.com',
} as const

const REQUIRED = [
  'GMAIL_CLIENT_ID',
  'GMAIL_CLIENT_SECRET',
  'GMAIL_REFRESH_TOKEN',
  'GMAIL_MAILBOX',
] as const

/** Null when the poller is off. @throws {ConfigError} listing every problem. */
export function loadGmailConfig(env: OriginEnv = process.env): GmailConfig | null {
  const value = (name: string) => env[name]?.trim() || undefined
  const missing = REQUIRED.filter((name) => !value(name))
  if (missing.length === REQUIRED.length) return null

  const problems: string[] = []
  if (missing.length > 0) {
    problems.push(
      `Gmail polling is half configured: set ${missing.join(', ')} too (or unset every GMAIL_* variable to turn it off)`,
    )
  }
  const mailbox = normalizeMailbox(value('GMAIL_MAILBOX') ?? '')
  if (value('GMAIL_MAILBOX') && !mailbox) {
    problems.push('GMAIL_MAILBOX must be the polled address, e.g. support@example.com')
  }
  const rawInterval = value('GMAIL_POLL_INTERVAL_MS')
  const pollIntervalMs =
    rawInterval === undefined ? GMAIL_DEFAULTS.pollIntervalMs : Number(rawInterval)
  if (!Number.isInteger(pollIntervalMs) || pollIntervalMs < 10 || pollIntervalMs > 86_400_000) {
    problems.push(
      `GMAIL_POLL_INTERVAL_MS must be an integer from 10 to 86400000 (default ${GMAIL_DEFAULTS.pollIntervalMs})`,
    )
  }
  const url = (name: string, fallback: string): string => {
    const raw = value(name) ?? fallback
    try {
      const parsed = new URL(raw)
      if (parsed.protocol === 'http:' || parsed.protocol === 'https:')
        return raw.replace(/\/+$/, '')
    } catch {}
    problems.push(`${name} must be an http(s) URL (default ${fallback})`)
    return fallback
  }
  const tokenUrl = url('GMAIL_OAUTH_TOKEN_URL', GMAIL_DEFAULTS.tokenUrl)
  const apiBaseUrl = url('GMAIL_API_BASE_URL', GMAIL_DEFAULTS.apiBaseUrl)
  if (problems.length > 0) throw new ConfigError(problems)
  return {
    clientId: value('GMAIL_CLIENT_ID') as string,
    clientSecret: value('GMAIL_CLIENT_SECRET') as string,
    refreshToken: value('GMAIL_REFRESH_TOKEN') as string,
    mailbox: mailbox as string,
    pollIntervalMs,
    tokenUrl,
    apiBaseUrl,
  }
}

/** The worker's reading of the shared Redis variables (same names, defaults and bounds). */
export function loadGmailRedisSettings(env: OriginEnv = process.env): GmailRedisSettings {
  const warnings: string[] = []
  return { ...readClaimSettings(env, warnings), warnings }
}
