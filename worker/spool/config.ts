/**
 * The spool's settings (its rows of the Worker's table, worker/settings.ts), parsed with the rest
 * of the Worker's (worker/config.ts calls {@link parseSpoolSettings}).
 *
 * The queue's own delivery settings (batch size, `max_retries`, `dead_letter_queue`) live in
 * wrangler.toml; these are what the code decides per message.
 * @module
 */
import { CHANNEL_NAME, type Channel } from '../../contract/event'
import { rawValue, readInt, type StringEnv, setting } from '../../shared/settings'

export interface SpoolSettings {
  /**
   * Event channels whose deliveries go to the spool queue when the origin cannot take them. The
   * rest get the vendor's retry answer. @default every channel, `all` (email included: accepting
   * the mail beats a temporary SMTP failure that delays it by the sender's retry schedule)
   */
  channels: SpooledChannels
  /**
   * Event channels whose first-seen events go to the spool queue before any forward: the vendor
   * is answered once the event is queued, and the consumer stores it in a batch. Never `api`
   * (its answer carries the stored row). @default none (docs/benchmark.md, "Queue first": what
   * it costs and gains, measured)
   */
  firstChannels: SpooledChannels
  /**
   * Forward attempts the consumer makes before it hands a message to the dead-letter queue.
   * Must stay below the consumer's `max_retries` in wrangler.toml. @default 20 (up to 10.4 h of
   * retries: docs/deploying.md step 4)
   */
  maxAttempts: number
  /** Wait after the first failed forward, doubling from there. @default 5 */
  retryBaseSeconds: number
  /** No wait is longer (Cloudflare allows at most 24 h). @default 3600 */
  retryMaxSeconds: number
}

/** Which event channels are spooled: every one (whatever channels are added later), or these. */
export type SpooledChannels = Pick<ReadonlySet<Channel>, 'has'>
const EVERY_CHANNEL: SpooledChannels = { has: () => true }

export const SPOOL_CHANNELS = setting({
  name: 'SPOOL_CHANNELS',
  kind: 'list',
  secret: false,
  default: 'all',
  doc: 'event channels queued when the origin fails; all = every channel; none = off',
})
export const QUEUE_FIRST_CHANNELS = setting({
  name: 'QUEUE_FIRST_CHANNELS',
  kind: 'list',
  secret: false,
  default: 'none',
  doc: 'event channels whose first-seen events are queued before any forward (answered once queued, stored by the consumer in batches); all = every spooled channel but api; none = off',
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
  QUEUE_FIRST_CHANNELS,
  SPOOL_MAX_ATTEMPTS,
  SPOOL_RETRY_BASE_SECONDS,
  SPOOL_RETRY_MAX_SECONDS,
] as const

/**
 * `SPOOL_CHANNELS`: `all`, comma-separated event channels, or `none` to switch the spool off (then
 * an origin failure is answered with the vendor's retry status, and only the vendor retries).
 * `known`: the event channels this Worker writes (worker/channels/index.ts), for the warning
 * about a name none of them has (a typo spools nothing).
 */
export function parseSpoolSettings(
  env: StringEnv,
  warnings: string[],
  known: readonly Channel[],
): SpoolSettings {
  const retryBaseSeconds = readInt(env, SPOOL_RETRY_BASE_SECONDS, warnings)
  let retryMaxSeconds = readInt(env, SPOOL_RETRY_MAX_SECONDS, warnings)
  if (retryMaxSeconds < retryBaseSeconds) {
    warnings.push('SPOOL_RETRY_MAX_SECONDS is below SPOOL_RETRY_BASE_SECONDS; using the base')
    retryMaxSeconds = retryBaseSeconds
  }
  const channels = channelList(SPOOL_CHANNELS.name, env, warnings, known)
  return {
    channels,
    firstChannels: queueFirstChannels(env, warnings, known, channels),
    maxAttempts: readInt(env, SPOOL_MAX_ATTEMPTS, warnings),
    retryBaseSeconds,
    retryMaxSeconds,
  }
}

/** A channel-list setting: `all`, comma-separated event channels, or `none`. */
function channelList(
  name: string,
  env: StringEnv,
  warnings: string[],
  known: readonly Channel[],
): SpooledChannels {
  const value = rawValue(env, name)?.trim().toLowerCase()
  if (!value || value === 'all') return EVERY_CHANNEL
  if (value === 'none') return new Set()
  const names = value
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
  const valid = names.filter((name) => CHANNEL_NAME.test(name))
  if (!names.every((name) => known.includes(name))) {
    warnings.push(`${name} names unknown channels; known: ${known.join(', ')}, all or none`)
  }
  return new Set(valid)
}

/**
 * `QUEUE_FIRST_CHANNELS`: none unless set (its default), never `api` (a client's 201 carries the
 * stored row; queued first, every answer would be a 202), and only channels that are spooled at
 * all (SPOOL_CHANNELS): a channel queued first but not spooled is named in a warning.
 */
function queueFirstChannels(
  env: StringEnv,
  warnings: string[],
  known: readonly Channel[],
  spooled: SpooledChannels,
): SpooledChannels {
  if (!rawValue(env, QUEUE_FIRST_CHANNELS.name)?.trim()) return new Set()
  const listed = channelList(QUEUE_FIRST_CHANNELS.name, env, warnings, known)
  if (listed.has('api') && listed !== EVERY_CHANNEL) {
    warnings.push(
      'QUEUE_FIRST_CHANNELS names api: its requests are never queued first (a 201 carries the row)',
    )
  }
  const notSpooled = known.filter((c) => c !== 'api' && listed.has(c) && !spooled.has(c))
  if (notSpooled.length > 0 && listed !== EVERY_CHANNEL) {
    warnings.push(
      `QUEUE_FIRST_CHANNELS names channels SPOOL_CHANNELS does not spool: ${notSpooled.join(', ')}`,
    )
  }
  return { has: (channel) => channel !== 'api' && listed.has(channel) && spooled.has(channel) }
}
