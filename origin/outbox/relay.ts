/**
 * The outbox relay: hands each new outbox row downstream once, and retries the ones that failed.
 * Every origin pod may run one; they share the work through Postgres (`FOR UPDATE SKIP LOCKED`
 * plus a lease per claimed row), so each row is handed off by one relay at a time.
 *
 * One pass = new rows (a batch, handed off in parallel), then due failures (a batch). A failed
 * first hand-off becomes a `channel_failures` row (stage 'downstream'); the retry path replays it
 * with exponential backoff and jitter until FAILURE_MAX_ATTEMPTS, then marks it dead for an
 * operator (`npm run failures`). Delivery downstream is at least once, with the same
 * `Idempotency-Key: outbox-{id}` on every attempt: a relay that dies between the downstream's 2xx
 * and its own write, or an answer lost to a timeout, means the row goes again under that key.
 * @module
 */
import type { Database } from '../db'
import { describeError } from '../errors'
import { backoffMs, isExhausted } from '../failures/policy'
import { replayClaimed } from '../failures/replay'
import { claimDueFailures, recordDownstreamFailure } from '../failures/store'
import type { Logger } from '../log'
import type { RelayConfig } from './config'
import { handOff, type OutboxRow } from './downstream'
import type { RelayMetrics } from './metrics'
import { claimNewRows, markProcessed } from './store'

/** A claim's lease outlives the hand-off's own bound by this much (the writes after it). */
const LEASE_MARGIN_MS = 30_000

export interface RelayDeps {
  db: Database
  config: RelayConfig
  logger: Logger
  metrics: RelayMetrics
  /** In [0, 1), the backoff's jitter. @default Math.random */
  random?: () => number
}

export interface PassResult {
  relayed: number
  failed: number
  retried: number
  resolved: number
  dead: number
}

export function leaseMs(config: RelayConfig): number {
  return config.downstream.timeoutMs + LEASE_MARGIN_MS
}

/** One pass over new rows and due failures. Throws only when Postgres does. */
export async function relayPass(deps: RelayDeps): Promise<PassResult> {
  const { db, config } = deps
  const result: PassResult = { relayed: 0, failed: 0, retried: 0, resolved: 0, dead: 0 }
  const fresh = await claimNewRows(db, config.batchSize, leaseMs(config))
  await settleAll(fresh.map((row) => relayNewRow(deps, row, result)))
  const due = await claimDueFailures(db, config.batchSize, leaseMs(config))
  await settleAll(
    due.map(async (claimed) => {
      result.retried++
      const outcome = await replayClaimed(
        { db, downstream: config.downstream, retry: config.retry, random: deps.random },
        claimed,
      )
      const fields = {
        failureId: claimed.failureId,
        outboxId: claimed.row.id,
        messageId: claimed.row.messageId,
        outcome: outcome.outcome,
      }
      switch (outcome.outcome) {
        case 'resolved':
        case 'already_processed':
          result.resolved++
          if (outcome.outcome === 'resolved') deps.metrics.relayed.labels('retry').inc()
          deps.logger.info('outbox failure resolved', fields)
          break
        case 'retry_scheduled':
          deps.metrics.failed.labels('retry').inc()
          deps.logger.warn('outbox hand-off failed again', {
            ...fields,
            attempts: outcome.attempts,
            retryInMs: outcome.retryInMs,
            error: outcome.error,
          })
          break
        case 'dead':
          result.dead++
          deps.metrics.failed.labels('retry').inc()
          deps.metrics.dead.inc()
          deps.logger.error('outbox hand-off dead', {
            ...fields,
            attempts: outcome.attempts,
            error: outcome.error,
          })
          break
        case 'claim_lost':
          deps.logger.warn('outbox failure claim lost', { ...fields, handedOff: outcome.handedOff })
          break
      }
    }),
  )
  return result
}

/**
 * Waits for every hand-off of a batch (none is left running behind the pass, so `stop()` never
 * closes the pool under one), then throws the first failure, if any (Postgres unavailable).
 */
async function settleAll(work: Array<Promise<void>>): Promise<void> {
  const results = await Promise.allSettled(work)
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
  if (failed) throw failed.reason
}

async function relayNewRow(deps: RelayDeps, row: OutboxRow, result: PassResult): Promise<void> {
  const { db, config, logger, metrics } = deps
  const fields = { outboxId: row.id, messageId: row.messageId, topic: row.topic }
  const handed = await handOff(config.downstream, row)
  if (handed.ok) {
    await markProcessed(db, row.id)
    result.relayed++
    metrics.relayed.labels('new').inc()
    logger.debug('outbox row relayed', { ...fields, status: handed.status })
    return
  }
  result.failed++
  metrics.failed.labels('new').inc()
  const dead = isExhausted(config.retry, 1)
  const retryInMs = dead ? 0 : backoffMs(config.retry, 1, (deps.random ?? Math.random)())
  const failureId = await recordDownstreamFailure(
    db,
    row,
    handed.error,
    dead ? 'dead' : 'pending',
    retryInMs,
  )
  if (dead) {
    result.dead++
    metrics.dead.inc()
  }
  logger.warn('outbox hand-off failed', { ...fields, failureId, retryInMs, error: handed.error })
}

export interface RunningRelay {
  /** Runs one pass now (tests; the loop keeps its own schedule). */
  pass(): Promise<PassResult>
  /** Stops after the pass in progress. Idempotent. */
  stop(): Promise<void>
}

/**
 * Runs passes back to back while there is work, and every OUTBOX_POLL_INTERVAL_MS otherwise. A
 * pass that fails (Postgres unavailable) is logged and the loop carries on at the next interval.
 */
export function runRelayLoop(deps: RelayDeps): RunningRelay {
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let current: Promise<unknown> = Promise.resolve()

  const tick = async () => {
    timer = undefined
    let busy = false
    try {
      const pass = relayPass(deps)
      current = pass
      const result = await pass
      busy = result.relayed + result.failed + result.retried > 0
    } catch (err) {
      deps.logger.warn('outbox relay pass failed', describeError(err))
    }
    if (!stopped) timer = setTimeout(tick, busy ? 0 : deps.config.pollIntervalMs)
  }
  timer = setTimeout(tick, 0)

  let stopping: Promise<void> | undefined
  return {
    pass: () => relayPass(deps),
    stop() {
      stopping ??= (async () => {
        stopped = true
        if (timer) clearTimeout(timer)
        await current.catch(() => {})
      })()
      return stopping
    },
  }
}
