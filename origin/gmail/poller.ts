/**
 * The Gmail poller: every interval, for one mailbox, take the lease (one poller at a time across
 * all origin pods), list what was added since the stored historyId, take each message through
 * dedup, and store the new historyId once every page is consumed.
 *
 * - No stored historyId (first run), or history.list answers 404 (too old): a full sync. The
 *   mailbox's current historyId is read first (users.getProfile), then the newest INBOX messages
 *   (bounded) are taken oldest first, then that historyId is stored: anything that arrives during
 *   the sync is in the history after it, and a message seen twice is a duplicate, not a loss.
 * - A poll takes at most `maxMessagesPerPoll` messages; a backlog larger than that is worked off
 *   over several polls by storing the id of the last history record fully processed (a valid
 *   startHistoryId: "records after" it are exactly the ones not yet processed).
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
import { hasSkippedLabel, ingestGmailMessage, type MessageDeps } from './ingest-message'
import { createGmailMetrics, type GmailMetrics, type PollError, type PollStatus } from './metrics'
import type { AccessTokens } from './oauth'
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

export interface PollResult {
  status: PollStatus
  mode?: 'history' | 'full_sync'
  /** Messages taken through dedup / skipped by label / recorded as failures in this poll. */
  ingested: number
  skipped: number
  failures: number
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

/** The lease was taken over (ours ran out): stop without storing anything. */
class LeaseLostError extends Error {
  constructor() {
    super('the mailbox lease was taken over by another poller')
    this.name = 'LeaseLostError'
  }
}

type PollCounts = Pick<PollResult, 'ingested' | 'skipped' | 'failures'>

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
  const deps: MessageDeps = {
    api,
    db: options.db,
    mailbox: config.mailbox,
    claims: options.claims,
    metrics,
    logger,
  }

  /** Renews the lease once a third of it has passed; throws when it was taken over. */
  let renewedAt = 0
  async function keepLease(): Promise<void> {
    if (Date.now() - renewedAt < limits.leaseMs / 3) return
    if (!(await state.renew())) throw new LeaseLostError()
    renewedAt = Date.now()
  }

  async function take(id: string, counts: PollCounts): Promise<void> {
    if (stopping.signal.aborted) throw new StoppedError()
    await keepLease()
    const outcome = await ingestGmailMessage(deps, id)
    if (outcome.status === 'skipped') counts.skipped++
    else if (outcome.status === 'failed') counts.failures++
    else counts.ingested++
  }

  /** Everything since `start`, page by page; the new historyId is stored only after the last. */
  async function historySync(start: string, counts: PollCounts): Promise<PollStatus> {
    const seen = new Set<string>()
    let pageToken: string | null = null
    let lastDone: string | null = null
    let taken = 0
    for (;;) {
      const page = await api.history(start, pageToken)
      for (const record of page.records) {
        if (taken >= limits.maxMessagesPerPoll && lastDone !== null) {
          return (await state.store(lastDone)) ? 'partial' : lost()
        }
        for (const added of record.added) {
          // One message can appear in several records; labels here save a messages.get.
          if (seen.has(added.id)) continue
          seen.add(added.id)
          if (hasSkippedLabel(added.labelIds)) {
            metrics.skipped.labels('label').inc()
            counts.skipped++
            continue
          }
          await take(added.id, counts)
          taken++
        }
        lastDone = record.id
      }
      pageToken = page.nextPageToken
      // The last page: only now is the mailbox's historyId safe to store.
      if (!pageToken) return (await state.store(page.historyId)) ? 'completed' : lost()
      await keepLease()
    }
  }

  async function fullSync(
    reason: 'first_run' | 'history_expired',
    counts: PollCounts,
  ): Promise<PollStatus> {
    metrics.fullSyncs.labels(reason).inc()
    logger.info('gmail full sync', { mailbox: config.mailbox, reason })
    const { historyId } = await api.profile()
    const ids: string[] = []
    let pageToken: string | null = null
    do {
      const page = await api.messages(pageToken, 'INBOX')
      ids.push(...page.ids.slice(0, limits.fullSyncMaxMessages - ids.length))
      pageToken = page.nextPageToken
      await keepLease()
    } while (pageToken && ids.length < limits.fullSyncMaxMessages)
    // Listed newest first; oldest first lets a reply find the conversation of what it answers.
    for (const id of ids.reverse()) await take(id, counts)
    return (await state.store(historyId)) ? 'completed' : lost()
  }

  function lost(): never {
    throw new LeaseLostError()
  }

  async function poll(): Promise<PollResult> {
    const counts: PollCounts = { ingested: 0, skipped: 0, failures: 0 }
    const started = Date.now()
    let lease: Lease | null
    try {
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
        status = await fullSync('first_run', counts)
      } else {
        try {
          status = await historySync(lease.historyId, counts)
        } catch (err) {
          if (!(err instanceof HistoryExpiredError)) throw err
          mode = 'full_sync'
          status = await fullSync('history_expired', counts)
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
