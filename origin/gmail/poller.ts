/**
 * The Gmail poller's loop: every interval, for one mailbox, take the lease (one poller at a time
 * across all origin pods), run one poll (sync.ts: the history since the stored historyId, or a
 * full sync when there is none or it is too old), count and log it, give the lease back if it
 * failed. A partial poll (a backlog over `maxMessagesPerPoll`) is followed by the next at once.
 *
 * - One message that cannot be fetched, parsed or stored (404 or another 4xx for its id, no
 *   `raw`, over the size bound, unparseable, refused by the database; the line is in api.ts) is
 *   recorded in channel_failures and counts as processed: the historyId moves past it, and it is
 *   not fetched again on every poll (`npm run failures -- replay` fetches it once more). The
 *   historyId only ever moves past messages that were ingested, skipped by label, or recorded.
 * - A poll that fails (Gmail, OAuth, Postgres unavailable) stores nothing, is logged and counted,
 *   and the next interval tries again from the same historyId: it never stops the origin.
 * @module
 */
import { hostname } from 'node:os'
import type { Registry } from 'prom-client'
import type { ClaimStore } from '../../claims'
import type { Database } from '../db'
import { describeError } from '../errors'
import type { Logger } from '../log'
import { gmailClient, HistoryExpiredError, MAX_MESSAGE_BYTES } from './api'
import type { GmailConfig } from './config'
import { DEFAULT_RETRY, GmailHttpError, type RetryPolicy, StoppedError, sleep } from './http'
import { gmailMailbox } from './mailbox-connection'
import { createGmailMetrics, type GmailMetrics, type PollError, type PollStatus } from './metrics'
import type { AccessTokens } from './oauth'
import { fullSync, historySync, LeaseLostError, type PollCounts, type SyncDeps } from './sync'
import { type Lease, SyncState } from './sync-state'

export interface PollerLimits {
  /** How long a lease lasts unless renewed (renewed as the poll goes on). @default 60000 */
  leaseMs: number
  /** Messages per poll before it stops at a history record boundary. @default 1000 */
  maxMessagesPerPoll: number
  /** Newest INBOX messages a full sync takes. @default 500 */
  fullSyncMaxMessages: number
  /** Bound on one Gmail / OAuth call. @default 10000 */
  httpTimeoutMs: number
  /** Bound on one messages.get answer; a larger one is recorded as a failure. @default 40 MiB */
  maxMessageBytes: number
  retry: RetryPolicy
}

export const DEFAULT_LIMITS: PollerLimits = {
  leaseMs: 60_000,
  maxMessagesPerPoll: 1_000,
  fullSyncMaxMessages: 500,
  httpTimeoutMs: 10_000,
  maxMessageBytes: MAX_MESSAGE_BYTES,
  retry: DEFAULT_RETRY,
}

export interface GmailPollerOptions {
  config: GmailConfig
  db: Database
  claims: ClaimStore | null
  logger: Logger
  /** Where the counters go (the origin's /metrics registry). @default a fresh one */
  registry?: Registry
  /** This poller's lease identity. @default hostname:pid:random */
  owner?: string
  limits?: Partial<PollerLimits>
  /** Injectable for tests (backoff jitter). */
  random?: () => number
}

export interface PollResult extends PollCounts {
  status: PollStatus
  mode?: 'history' | 'full_sync'
  /** Error code of a failed poll. */
  error?: string
  /** When this poller held the lease (epoch ms), for the one-at-a-time check. */
  heldFrom?: number
  heldUntil?: number
}

export interface GmailPoller {
  readonly mailbox: string
  readonly owner: string
  readonly metrics: GmailMetrics
  readonly tokens: AccessTokens
  /** One poll now (joins the running one if any). Never throws. */
  pollOnce(): Promise<PollResult>
  /** Polls every `pollIntervalMs` (measured from the end of the previous poll) until stopped. */
  start(): void
  /** Stops the loop, aborts Gmail calls in flight and waits for the poll to end. Idempotent. */
  stop(): Promise<void>
}

export function createGmailPoller(options: GmailPollerOptions): GmailPoller {
  const { config, logger } = options
  const limits: PollerLimits = { ...DEFAULT_LIMITS, ...options.limits }
  const owner =
    options.owner ?? `${hostname()}:${process.pid}:${Math.random().toString(36).slice(2, 8)}`
  const metrics = createGmailMetrics(options.registry)
  const stopping = new AbortController()
  const http = {
    timeoutMs: limits.httpTimeoutMs,
    retry: limits.retry,
    signal: stopping.signal,
    random: options.random,
    onRetry: (reason: string) => metrics.httpRetries.labels(reason).inc(),
  }
  const { tokens, api } = gmailClient(config, http, limits.maxMessageBytes)
  const state = new SyncState(options.db, config.mailbox, owner, limits.leaseMs)

  /** Renews the lease once a third of it has passed; throws when it was taken over. */
  let renewedAt = 0
  async function keepLease(): Promise<void> {
    if (Date.now() - renewedAt < limits.leaseMs / 3) return
    if (!(await state.renew())) throw new LeaseLostError()
    renewedAt = Date.now()
  }
  const sync: SyncDeps = {
    messages: {
      api,
      db: options.db,
      mailbox: config.mailbox,
      aliases: config.aliases,
      claims: options.claims,
      metrics,
      logger,
    },
    state,
    limits,
    signal: stopping.signal,
    keepLease,
  }

  async function poll(): Promise<PollResult> {
    const counts: PollCounts = { ingested: 0, skipped: 0, failures: 0 }
    const started = Date.now()
    let lease: Lease | null
    try {
      // Read at each poll: a change in the registry applies from the next poll on.
      const keyed = await gmailMailbox(options.db, config.mailbox, config.aliases)
      if (keyed.kind === 'disabled') return disabled(keyed.connection.id)
      sync.messages.aliases = keyed.aliases
      lease = await state.acquire()
    } catch (err) {
      return failed(err, counts, started)
    }
    if (!lease) {
      metrics.polls.labels('busy').inc()
      return { status: 'busy', ingested: 0, skipped: 0, failures: 0 }
    }
    const heldFrom = Date.now()
    renewedAt = heldFrom
    let mode: PollResult['mode'] = lease.historyId === null ? 'full_sync' : 'history'
    try {
      let status: PollStatus
      if (lease.historyId === null) {
        status = await fullSync(sync, 'first_run', counts)
      } else {
        try {
          status = await historySync(sync, lease.historyId, counts)
        } catch (err) {
          if (!(err instanceof HistoryExpiredError)) throw err
          mode = 'full_sync'
          status = await fullSync(sync, 'history_expired', counts)
        }
      }
      metrics.polls.labels(status).inc()
      const result = { status, mode, ...counts, heldFrom, heldUntil: Date.now() }
      // A poll that found nothing is the common case: only worth a line when debugging.
      const idle = mode === 'history' && counts.ingested + counts.skipped + counts.failures === 0
      const line = { mailbox: config.mailbox, ...result, ms: Date.now() - started }
      if (idle) logger.debug('gmail poll', line)
      else logger.info('gmail poll', line)
      return result
    } catch (err) {
      // Give the lease back so the next poll (any pod) need not wait for it to run out.
      await state.release().catch(() => {})
      return { ...failed(err, counts, started), mode, heldFrom, heldUntil: Date.now() }
    }
  }

  /** The mailbox's connection is disabled: Gmail keeps the mail, taken once it is enabled. */
  function disabled(connection: string): PollResult {
    metrics.polls.labels('disabled').inc()
    logger.debug('gmail poll skipped: mailbox connection disabled', {
      mailbox: config.mailbox,
      connection,
    })
    return { status: 'disabled', ingested: 0, skipped: 0, failures: 0 }
  }

  function failed(err: unknown, counts: PollCounts, started: number): PollResult {
    const reason = errorCode(err)
    metrics.polls.labels('failed').inc()
    metrics.pollErrors.labels(reason).inc()
    const fields = { mailbox: config.mailbox, reason, ...counts, ms: Date.now() - started }
    if (reason === 'stopped') logger.info('gmail poll stopped', fields)
    else logger.warn('gmail poll failed', { ...fields, error: describeError(err) })
    return { status: 'failed', ...counts, error: reason }
  }

  let running: Promise<PollResult> | null = null
  let loop: Promise<void> | null = null

  function pollOnce(): Promise<PollResult> {
    running ??= poll().finally(() => {
      running = null
    })
    return running
  }

  return {
    mailbox: config.mailbox,
    owner,
    metrics,
    tokens,
    pollOnce,
    start() {
      if (loop || stopping.signal.aborted) return
      loop = (async () => {
        while (!stopping.signal.aborted) {
          const result = await pollOnce()
          // A backlog left over (partial) is worked on at once; anything else waits its turn.
          if (result.status === 'partial') continue
          await sleep(config.pollIntervalMs, stopping.signal).catch(() => {})
        }
      })()
    },
    async stop() {
      stopping.abort()
      await loop
      await running
    },
  }
}

/** A stable snake_case code for the log and the error metric. */
function errorCode(err: unknown): PollError {
  if (err instanceof StoppedError) return 'stopped'
  if (err instanceof LeaseLostError) return 'lease_lost'
  if (err instanceof GmailHttpError) {
    // Retries ran out on 429 / 5xx / network: Google (or the way to it) is down or throttling.
    if (err.exhausted) return err.endpoint === 'token' ? 'oauth_unavailable' : 'gmail_unavailable'
    if (err.endpoint === 'token') return 'oauth_failed'
    if (err.status === 401 || err.status === 403) return 'gmail_unauthorized'
    return 'gmail_error'
  }
  const code = (err as { code?: unknown } | null)?.code
  if (code === 'database_unavailable') return 'database_unavailable'
  return 'internal_error'
}
