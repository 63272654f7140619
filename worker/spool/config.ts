/**
 * The spool's settings (its rows of the Worker's table, worker/settings.ts), parsed with the rest
 * of the Worker's (worker/config.ts calls {@link parseSpoolSettings}).
 *
 * The queue's own delivery settings (batch size, `max_retries`, `dead_letter_queue`) live in
 * wrangler.toml; these are what the code decides per message.
 * @module
 */
import { CHANNELS, type Channel } from '../../contract/event'
import { readInt, setting } from '../../contract/settings'
import type { Env } from '../env'

export interface SpoolSettings {
  /**
   * Event channels whose deliveries go to the spool queue when the origin cannot take them. The
   * rest get the vendor's retry answer. @default every channel (email included: accepting the
   * mail beats a temporary SMTP failure that delays it by the sender's retry schedule)
   */
  channels: ReadonlySet<Channel>
  /**
   * Forward attempts the consumer makes before it hands a message to the dead-letter queue.
   * Must stay below the consumer's `max_retries` in wrangler.toml. @default 20 (~8 h of retries)
   */
  maxAttempts: number
  /** Wait after the first failed forward, doubling from there. @default 5 */
  retryBaseSeconds: number
  /** No wait is longer (Cloudflare allows at most 24 h). @default 3600 */
  retryMaxSeconds: number
}

export const SPOOL_CHANNELS = setting({
  name: 'SPOOL_CHANNELS',
  kind: 'list',
  secret: false,
  default: CHANNELS.join(','),
  doc: 'event channels queued when the origin fails; none = off',
})
/** Below the consumer's `max_retries` (wrangler.toml; Cloudflare allows at most 100). */
export const SPOOL_MAX_ATTEMPTS = setting({
  name: 'SPOOL_MAX_ATTEMPTS',
  kind: 'int',
  secret: false,
  default: 20,
  min: 1,
  max: 99,
  doc: 'forwards of one queued event before it is a dead letter',
})
/** Cloudflare Queues' `retry({ delaySeconds })` allows at most 24 h. */
export const SPOOL_RETRY_BASE_SECONDS = setting({
  name: 'SPOOL_RETRY_BASE_SECONDS',
  kind: 'int',
  secret: false,
  default: 5,
  min: 0,
  max: 86_400,
  doc: 'the wait after the first failed forward, doubling from there',
})
export const SPOOL_RETRY_MAX_SECONDS = setting({
  name: 'SPOOL_RETRY_MAX_SECONDS',
  kind: 'int',
  secret: false,
  default: 3_600,
  min: 0,
  max: 86_400,
  doc: 'no wait between forwards is longer',
})

export const SPOOL_SETTINGS = [
  SPOOL_CHANNELS,
  SPOOL_MAX_ATTEMPTS,
  SPOOL_RETRY_BASE_SECONDS,
  SPOOL_RETRY_MAX_SECONDS,
] as const

export const SPOOL_DEFAULTS = {
  channels: CHANNELS,
  maxAttempts: SPOOL_MAX_ATTEMPTS.default,
  retryBaseSeconds: SPOOL_RETRY_BASE_SECONDS.default,
  retryMaxSeconds: SPOOL_RETRY_MAX_SECONDS.default,
} as const

/**
 * `SPOOL_CHANNELS`: comma-separated event channels, or `none` to switch the spool off (then an
 * origin failure is answered with the vendor's retry status, as before the spool existed).
 */
export function parseSpoolSettings(env: Env, warnings: string[]): SpoolSettings {
  const retryBaseSeconds = readInt(env, SPOOL_RETRY_BASE_SECONDS, warnings)
  let retryMaxSeconds = readInt(env, SPOOL_RETRY_MAX_SECONDS, warnings)
  if (retryMaxSeconds < retryBaseSeconds) {
    warnings.push('SPOOL_RETRY_MAX_SECONDS is below SPOOL_RETRY_BASE_SECONDS; using the base')
    retryMaxSeconds = retryBaseSeconds
  }
  return {
    channels: spoolChannels(env.SPOOL_CHANNELS, warnings),
    maxAttempts: readInt(env, SPOOL_MAX_ATTEMPTS, warnings),
    retryBaseSeconds,
    retryMaxSeconds,
  }
}

function spoolChannels(raw: string | undefined, warnings: string[]): ReadonlySet<Channel> {
  const value = raw?.trim().toLowerCase()
  if (!value) return new Set(SPOOL_DEFAULTS.channels)
  if (value === 'none') return new Set()
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
  const known = names.filter((name): name is Channel =>
    (CHANNELS as readonly string[]).includes(name),
  )
  if (known.length !== names.length) {
    warnings.push(`SPOOL_CHANNELS names unknown channels; known: ${CHANNELS.join(', ')}, or none`)
  }
  return new Set(known)
}
