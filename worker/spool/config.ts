/**
 * The spool's settings, parsed with the rest of the Worker's (worker/config.ts calls
 * {@link parseSpoolSettings} with its integer reader, so invalid values warn the same way).
 *
 * The queue's own delivery settings (batch size, `max_retries`, `dead_letter_queue`) live in
 * wrangler.toml; these are what the code decides per message.
 * @module
 */
import { CHANNELS, type Channel } from '../../contract/event'
import type { StringSetting } from '../config'
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

export const SPOOL_DEFAULTS = {
  channels: CHANNELS,
  maxAttempts: 20,
  retryBaseSeconds: 5,
  retryMaxSeconds: 3_600,
} as const

/** Cloudflare Queues' `retry({ delaySeconds })` and `max_retries` bounds. */
const MAX_DELAY_SECONDS = 86_400
const MAX_RETRIES = 100

type IntReader = (name: StringSetting, fallback: number, min: number, max: number) => number

/**
 * `SPOOL_CHANNELS`: comma-separated event channels, or `none` to switch the spool off (then an
 * origin failure is answered with the vendor's retry status, as before the spool existed).
 */
export function parseSpoolSettings(env: Env, int: IntReader, warnings: string[]): SpoolSettings {
  const retryBaseSeconds = int(
    'SPOOL_RETRY_BASE_SECONDS',
    SPOOL_DEFAULTS.retryBaseSeconds,
    0,
    MAX_DELAY_SECONDS,
  )
  let retryMaxSeconds = int(
    'SPOOL_RETRY_MAX_SECONDS',
    SPOOL_DEFAULTS.retryMaxSeconds,
    0,
    MAX_DELAY_SECONDS,
  )
  if (retryMaxSeconds < retryBaseSeconds) {
    warnings.push('SPOOL_RETRY_MAX_SECONDS is below SPOOL_RETRY_BASE_SECONDS; using the base')
    retryMaxSeconds = retryBaseSeconds
  }
  return {
    channels: spoolChannels(env.SPOOL_CHANNELS, warnings),
    maxAttempts: int('SPOOL_MAX_ATTEMPTS', SPOOL_DEFAULTS.maxAttempts, 1, MAX_RETRIES - 1),
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
