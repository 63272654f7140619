/**
 * Retry counting for the queue consumers: when a message given back to its queue comes again
 * (SPOOL_RETRY_*, exponential backoff with jitter), and each spool message given back counted
 * (decision `retried`, decided by the gateway, the failure's kind as reason) in the isolate's
 * decision counters: the console's "retried (last hour)". They are held, not flushed on the
 * interval's timer (a queue batch ends with its `waitUntil` work); consumer.ts sends what the
 * isolate holds at the end of every batch when a flush is due.
 * @module
 */

import { SPOOL_RETRIED } from '../../contract/decision-counts'
import { backoffMs } from '../../shared/backoff'
import type { Settings } from '../config'
import { holdDecision } from '../decision-counters'
import type { ForwardResult } from '../forward'
import { describeError, logProblem } from '../log'

/**
 * Runs `handle` for each item at once. A throw (a bug, R2 failing: not an answer) keeps that
 * item's message, on the normal schedule, counted as a spool retry when `countsRetries` (the
 * spool's messages; the dead-letter queue's are reports, not events).
 */
export async function eachGuarded<T extends { message: Message<unknown> }>(
  settings: Settings,
  queue: string,
  items: readonly T[],
  countsRetries: boolean,
  handle: (item: T) => Promise<void>,
): Promise<void> {
  await Promise.all(
    items.map(async (item) => {
      try {
        await handle(item)
      } catch (err) {
        logProblem('error', 'spool_consumer_error', { queue, error: describeError(err) })
        item.message.retry({ delaySeconds: retryDelaySeconds(settings, item.message.attempts) })
        if (countsRetries) countRetried(settings, channelOf(item.message.body), 'consumer_error')
      }
    }),
  )
}

/**
 * A spool message given back to its queue, counted in this isolate's decision counters (a map
 * update; sent by `flushIfDue` at the end of a batch, at most once per interval).
 */
export function countRetried(settings: Settings, channel: string, reason: string): void {
  holdDecision(settings, { channel, decision: SPOOL_RETRIED, decidedBy: 'gateway', reason })
}

/** Why the origin failed a queued event, as a code the console groups by (`origin_503`, ...). */
export function retryReason(result: Extract<ForwardResult, { kind: 'failed' }>): string {
  return result.reason === 'status' && result.status !== null
    ? `origin_${result.status}`
    : `origin_${result.reason}`
}

/** A queued message's channel, as far as it can be read (an unreadable one has none). */
function channelOf(body: unknown): string {
  const event = (body as { event?: { channel?: unknown } } | null)?.event
  return typeof event?.channel === 'string' && event.channel ? event.channel : 'unknown'
}

/** The wait before the next attempt after `attempts` failed ones (SPOOL_RETRY_*). */
export function retryDelaySeconds(settings: Settings, attempts: number, random = Math.random()) {
  const { retryBaseSeconds, retryMaxSeconds } = settings.spool
  const ms = backoffMs(
    { baseMs: retryBaseSeconds * 1000, maxMs: retryMaxSeconds * 1000 },
    attempts,
    random,
  )
  return Math.round(ms / 1000)
}
