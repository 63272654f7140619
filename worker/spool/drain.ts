/**
 * The drain (run by the cron trigger, `scheduled()`): forwards spooled events to the origin,
 * oldest first within each channel, and removes an entry only after the origin accepted it (any
 * 2xx: new, duplicate, edit applied). Then the delivery's claim becomes `done`.
 *
 * - One drainer at a time: a lock with a token (`SET NX PX`), given back at the end. If two runs
 *   overlap anyway (a lock that outlived its TTL), both may forward an entry: the origin's
 *   Postgres unique index makes that one row, and the second LREM removes nothing.
 * - Bounded per run by count (`SPOOL_DRAIN_MAX_PER_RUN`) and time (`SPOOL_DRAIN_BUDGET_MS`);
 *   each forward by the origin timeout. What is left waits for the next minute.
 * - Channels take turns a batch at a time, so one channel's backlog does not starve the others.
 * - The origin failing (5xx, timeout, network, 401...) stops that channel for this run with its
 *   entry kept, which keeps the order (an edit never overtakes its message) and does not hammer
 *   an origin that is down.
 * - The origin refusing an entry for good (400 / 413 / 422), or an entry that cannot be read,
 *   moves it to the dead list with an error log line; nothing loops forever.
 * @module
 */
import { CHANNELS, type Channel } from '../../contract/event'
import type { OriginConfig } from '../config'
import { newClaimToken, settledValue } from '../dedup/claims'
import { forwardBody } from '../forward'
import { describeError, logProblem } from '../log'
import type { SpoolSettings } from './config'
import { decodeEntry } from './entry'
import type { SpoolStore } from './store'

/** Entries read per LRANGE: few round trips, and a bounded read (entries are ≤ maxEntryBytes). */
const BATCH_SIZE = 10
/** Below this much time left in the run, a forward is not started. */
const MIN_FORWARD_MS = 200
/** The lock outlives the run's budget by this much (plus one forward), then frees itself. */
const LOCK_MARGIN_MS = 10_000

export interface DrainOptions {
  store: SpoolStore
  origin: OriginConfig
  spool: SpoolSettings
  dedupTtlSeconds: number
  originTimeoutMs: number
  /** @default Date.now */
  now?: () => number
}

export type DrainStop =
  /** Every list was empty (or every channel stopped on an origin failure). */
  | 'done'
  | 'budget'
  | 'count'
  /** A Redis call failed; the run ended early. */
  | 'redis_error'

export interface DrainReport {
  /** `busy`: another drainer holds the lock; nothing was done. */
  status: 'drained' | 'busy'
  /** Accepted by the origin as new (or edit applied). */
  forwarded: number
  /** Accepted by the origin as a duplicate (it had the message already). */
  duplicates: number
  /** Moved to a dead list. */
  dead: number
  /** Channels whose head entry the origin could not take now (kept for the next run). */
  originFailed: Channel[]
  stoppedBy?: DrainStop
  ms: number
}

export async function drainSpool(options: DrainOptions): Promise<DrainReport> {
  const now = options.now ?? Date.now
  const started = now()
  const report: DrainReport = {
    status: 'drained',
    forwarded: 0,
    duplicates: 0,
    dead: 0,
    originFailed: [],
    ms: 0,
  }
  const token = newClaimToken()
  const lockMs = options.spool.drainBudgetMs + options.originTimeoutMs + LOCK_MARGIN_MS
  if (!(await options.store.lock(token, lockMs))) {
    return { ...report, status: 'busy', ms: now() - started }
  }
  try {
    report.stoppedBy = await drainChannels(options, report, started + options.spool.drainBudgetMs)
  } finally {
    await options.store.unlock(token).catch(() => {})
  }
  report.ms = now() - started
  return report
}

/** Round robin over the channels, a batch each, until all are empty or stopped, or a bound hits. */
async function drainChannels(
  options: DrainOptions,
  report: DrainReport,
  deadline: number,
): Promise<DrainStop> {
  const now = options.now ?? Date.now
  const active = new Set<Channel>(CHANNELS)
  let handled = 0
  while (active.size > 0) {
    for (const channel of [...active]) {
      let batch: string[]
      try {
        batch = await options.store.peek(channel, BATCH_SIZE)
      } catch (err) {
        logProblem('error', 'spool_drain_redis_error', { channel, error: describeError(err) })
        return 'redis_error'
      }
      if (batch.length === 0) active.delete(channel)
      for (const raw of batch) {
        if (handled >= options.spool.drainMaxPerRun) return 'count'
        const left = deadline - now()
        if (left < MIN_FORWARD_MS) return 'budget'
        handled++
        let outcome: EntryOutcome
        try {
          outcome = await drainEntry(options, channel, raw, Math.min(options.originTimeoutMs, left))
        } catch (err) {
          logProblem('error', 'spool_drain_redis_error', { channel, error: describeError(err) })
          return 'redis_error'
        }
        if (outcome === 'kept') {
          report.originFailed.push(channel)
          active.delete(channel)
          break
        }
        report[outcome]++
      }
    }
  }
  return 'done'
}

type EntryOutcome = 'forwarded' | 'duplicates' | 'dead' | 'kept'

async function drainEntry(
  options: DrainOptions,
  channel: Channel,
  raw: string,
  timeoutMs: number,
): Promise<EntryOutcome> {
  const { store } = options
  const decoded = decodeEntry(raw)
  if (!decoded.ok) {
    await store.bury(channel, raw)
    logProblem('error', 'spool_entry_dead', { channel, reason: decoded.reason })
    return 'dead'
  }
  const { entry, event } = decoded
  const fields = {
    channel,
    deliveryKey: event.deliveryKey,
    entryId: entry.id,
    ageMs: (options.now ?? Date.now)() - entry.spooledAt,
  }
  const result = await forwardBody(options.origin, entry.body, timeoutMs)
  if (result.kind === 'accepted') {
    await store.ack(
      channel,
      raw,
      store.claimRedisKey(entry.claimKey),
      settledValue('spooled', entry.hash),
      settledValue('done', entry.hash),
      options.dedupTtlSeconds,
    )
    console.log(
      JSON.stringify({
        level: 'info',
        msg: 'spool_entry_drained',
        ...fields,
        origin: result.outcome ?? String(result.status),
      }),
    )
    return result.duplicate ? 'duplicates' : 'forwarded'
  }
  if (result.kind === 'permanent') {
    await store.bury(channel, raw)
    logProblem('error', 'spool_entry_dead', {
      ...fields,
      reason: 'refused by the origin',
      origin: `${result.status} ${result.code ?? ''}`.trim(),
    })
    return 'dead'
  }
  logProblem('warn', 'spool_entry_kept', {
    ...fields,
    origin: result.status === null ? result.reason : String(result.status),
  })
  return 'kept'
}
