/**
 * The Gmail poller's settings, from the origin's environment. Off when none of the four required
 * GMAIL_* variables is set; a partial set is a configuration error naming what is missing (a
 * poller that silently does nothing would look like "no email" for days).
 *
 * The Redis fast path reads the claim settings with the Worker's own reader (readClaimSettings,
 * claims/settings.ts, called where the poller is wired: index.ts, replay.ts): the poller must
 * claim under exactly the worker's keys, so both read the same rows the same way. Without Redis
 * the poller goes straight to the Postgres backstop.
 * @module
 */

import { normalizeMailbox } from '../../email/keys'
import { EMAIL_MAILBOX_ALIASES, type MailboxAliases, readMailboxAliases } from '../../email/mailbox'
import { readInt, readText, readUrl, setting } from '../../shared/settings'
import { ConfigError, type OriginEnv } from '../config'

export interface GmailConfig {
  /** `GMAIL_CLIENT_ID`: the OAuth client the refresh token was issued to. */
  clientId: string
  /** `GMAIL_CLIENT_SECRET` */
  clientSecret: string
  /** `GMAIL_REFRESH_TOKEN`: offline access, scope gmail.readonly (or gmail.modify). */
  refreshToken: string
  /**
   * `GMAIL_MAILBOX`: the polled address, lowercased; its failure rows and sync state are under it.
   * Keys are scoped by its canonical form (email/mailbox.ts), as the Worker's RCPT TO's.
   */
  mailbox: string
  /** `EMAIL_MAILBOX_ALIASES`, read as the Worker reads it. */
  aliases: MailboxAliases
  /** `GMAIL_POLL_INTERVAL_MS`: pause between the end of one poll and the next. @default 30000 */
  pollIntervalMs: number
  /** `GMAIL_OAUTH_TOKEN_URL` @default 'https://oauth2.googleapis.com/token' */
  tokenUrl: string
  /** `GMAIL_API_BASE_URL`, no trailing slash. @default 'https://gmail.googleapis.com' */
  apiBaseUrl: string
}

const secretText = <const N extends string>(name: N, doc: string) =>
  setting({ name, kind: 'string', secret: true, doc })

export const GMAIL_CLIENT_ID = secretText('GMAIL_CLIENT_ID', 'the OAuth client')
export const GMAIL_CLIENT_SECRET = secretText('GMAIL_CLIENT_SECRET', "the OAuth client's secret")
export const GMAIL_REFRESH_TOKEN = secretText(
  'GMAIL_REFRESH_TOKEN',
  'offline access, gmail.readonly',
)
export const GMAIL_MAILBOX = setting({
  name: 'GMAIL_MAILBOX',
  kind: 'string',
  secret: false,
  doc: 'the polled address; the inbox Cloudflare routes to (without +tag, aliases mapped)',
})
export const GMAIL_POLL_INTERVAL_MS = setting({
  name: 'GMAIL_POLL_INTERVAL_MS',
  kind: 'int',
  secret: false,
  default: 30_000,
  min: 10,
  max: 86_400_000,
  doc: 'pause between the end of one poll and the next',
})
export const GMAIL_OAUTH_TOKEN_URL = setting({
  name: 'GMAIL_OAUTH_TOKEN_URL',
  kind: 'url',
  secret: false,
  default: 'https://oauth2.googleapis.com/token',
  doc: "Google's token endpoint (a test server's in tests)",
})
export const GMAIL_API_BASE_URL = setting({
  name: 'GMAIL_API_BASE_URL',
  kind: 'url',
  secret: false,
  default: 'https://gmail.googleapis.com',
  doc: "Gmail's API (a test server's in tests)",
})

const REQUIRED = [GMAIL_CLIENT_ID, GMAIL_CLIENT_SECRET, GMAIL_REFRESH_TOKEN, GMAIL_MAILBOX] as const

/** The poller's rows of the origin's table (origin/settings.ts; it reads the claims' too). */
export const GMAIL_SETTINGS = [
  ...REQUIRED,
  GMAIL_POLL_INTERVAL_MS,
  GMAIL_OAUTH_TOKEN_URL,
  GMAIL_API_BASE_URL,
  EMAIL_MAILBOX_ALIASES,
] as const

export const GMAIL_DEFAULTS = {
  pollIntervalMs: GMAIL_POLL_INTERVAL_MS.default,
  tokenUrl: GMAIL_OAUTH_TOKEN_URL.default,
  apiBaseUrl: GMAIL_API_BASE_URL.default,
} as const

/** Null when the poller is off. @throws {ConfigError} listing every problem. */
export function loadGmailConfig(env: OriginEnv = process.env): GmailConfig | null {
  const required = REQUIRED.map((row) => readText(env, row))
  const missing = REQUIRED.filter((_, i) => required[i] === null).map((row) => row.name)
  if (missing.length === REQUIRED.length) return null
  const [clientId, clientSecret, refreshToken, rawMailbox] = required

  const problems: string[] = []
  if (missing.length > 0) {
    problems.push(
      `Gmail polling is half configured: set ${missing.join(', ')} too (or unset every GMAIL_* variable to turn it off)`,
    )
  }
  const mailbox = normalizeMailbox(rawMailbox ?? '')
  if (rawMailbox && !mailbox) {
    problems.push('GMAIL_MAILBOX must be the polled address, e.g. support@example.com')
  }
  const pollIntervalMs = readInt(env, GMAIL_POLL_INTERVAL_MS, problems)
  const tokenUrl = readUrl(env, GMAIL_OAUTH_TOKEN_URL, problems) ?? GMAIL_DEFAULTS.tokenUrl
  const apiBaseUrl = readUrl(env, GMAIL_API_BASE_URL, problems) ?? GMAIL_DEFAULTS.apiBaseUrl
  const aliases = readMailboxAliases(env, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  return {
    clientId: clientId as string,
    clientSecret: clientSecret as string,
    refreshToken: refreshToken as string,
    mailbox: mailbox as string,
    aliases,
    pollIntervalMs,
    tokenUrl,
    apiBaseUrl,
  }
}
