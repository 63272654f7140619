/**
 * The spool's settings, parsed with the rest of the Worker's (worker/config.ts calls
 * {@link parseSpoolSettings} with its integer reader, so invalid values warn the same way).
 * @module
 */
import { CHANNELS, type Channel } from '../../contract/event'
import type { Env } from '../env'

export interface SpoolSettings {
  /**
   * Event channels whose deliveries are spooled when the origin cannot take them. The rest get
   * the vendor's retry answer. @default slack, whatsapp, sms, telegram (email is left to the
   * sending server, which keeps the message and retries for days on a temporary SMTP error)
   */
  channels: ReadonlySet<Channel>
  /** Entries per channel list; past it a delivery gets the retry answer and an error log. @default 10000 */
  maxEntries: number
  /** Largest entry (envelope + forward body, UTF-8 bytes); larger: retry answer, error log. @default 262144 */
  maxEntryBytes: number
  /** Entries one drain run forwards at most (each costs about two subrequests). @default 200 */
  drainMaxPerRun: number
  /** Wall-clock budget of one drain run; the cron fires every 60 s. @default 20000 */
  drainBudgetMs: number
}

export const SPOOL_DEFAULTS = {
  channels: ['slack', 'whatsapp', 'sms', 'telegram'] as readonly Channel[],
  maxEntries: 10_000,
  maxEntryBytes: 262_144,
  drainMaxPerRun: 200,
  drainBudgetMs: 20_000,
} as const

type IntReader = (name: keyof Env, fallback: number, min: number, max: number) => number

/**
 * `SPOOL_CHANNELS`: comma-separated event channels, or `none` to switch the spool off (then an
 * origin failure is answered with the vendor's retry status, as before the spool existed).
 */
export function parseSpoolSettings(env: Env, int: IntReader, warnings: string[]): SpoolSettings {
  return {
    channels: spoolChannels(env.SPOOL_CHANNELS, warnings),
    maxEntries: int('SPOOL_MAX_ENTRIES', SPOOL_DEFAULTS.maxEntries, 1, 10_000_000),
    maxEntryBytes: int('SPOOL_MAX_ENTRY_BYTES', SPOOL_DEFAULTS.maxEntryBytes, 1_024, 10_485_760),
    drainMaxPerRun: int('SPOOL_DRAIN_MAX_PER_RUN', SPOOL_DEFAULTS.drainMaxPerRun, 1, 100_000),
    drainBudgetMs: int('SPOOL_DRAIN_BUDGET_MS', SPOOL_DEFAULTS.drainBudgetMs, 1_000, 600_000),
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
