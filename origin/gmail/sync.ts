/**
 * One poll's work on the mailbox, once the lease is held (origin/gmail/poller.ts holds it):
 *
 * - history: everything added since the stored historyId, page by page; the mailbox's new
 *   historyId is stored only after the last page. A poll takes at most `maxMessagesPerPoll`
 *   messages; a larger backlog is worked off over several polls by storing the id of the last
 *   history record fully processed (a valid startHistoryId: "records after" it are exactly the
 *   ones not yet processed).
 * - full sync (no stored historyId, or history.list answered 404): the mailbox's current
 *   historyId is read first (users.getProfile), then the newest INBOX messages (bounded) are taken
 *   oldest first, then that historyId is stored: anything that arrives during the sync is in the
 *   history after it, and a message seen twice is a duplicate, not a loss.
 *
 * The historyId only ever moves past messages that were ingested, skipped by label, or recorded
 * as failures (ingest-message.ts). Storing it checks the lease: a poller whose lease was taken
 * over stores nothing ({@link LeaseLostError}).
 * @module
 */
import { StoppedError } from './http'
import { hasSkippedLabel, ingestGmailMessage, type MessageDeps } from './ingest-message'
import type { PollStatus } from './metrics'
import type { SyncState } from './sync-state'

/** The lease was taken over (ours ran out): stop without storing anything. */
export class LeaseLostError extends Error {
  constructor() {
    super('the mailbox lease was taken over by another poller')
    this.name = 'LeaseLostError'
  }
}

/** Messages taken through dedup / skipped by label / recorded as failures in this poll. */
export interface PollCounts {
  ingested: number
  skipped: number
  failures: number
}

export interface SyncDeps {
  /** The Gmail API, the mailbox, the claims, the counters and the log (ingest-message.ts). */
  messages: MessageDeps
  state: Pick<SyncState, 'store'>
  limits: { maxMessagesPerPoll: number; fullSyncMaxMessages: number }
  /** Aborted when the poller stops: no further message is taken. */
  signal: AbortSignal
  /** Renews the lease when due; throws {@link LeaseLostError} when it was taken over. */
  keepLease(): Promise<void>
}

async function take(deps: SyncDeps, id: string, counts: PollCounts): Promise<void> {
  if (deps.signal.aborted) throw new StoppedError()
  await deps.keepLease()
  const outcome = await ingestGmailMessage(deps.messages, id)
  if (outcome.status === 'skipped') counts.skipped++
  else if (outcome.status === 'failed') counts.failures++
  else counts.ingested++
}

/** Stores `historyId` under the lease, or throws {@link LeaseLostError}. */
async function storeOrLose(deps: SyncDeps, historyId: string, status: PollStatus) {
  if (await deps.state.store(historyId)) return status
  throw new LeaseLostError()
}

/** Everything since `start`, page by page; the new historyId is stored only after the last. */
export async function historySync(
  deps: SyncDeps,
  start: string,
  counts: PollCounts,
): Promise<PollStatus> {
  const seen = new Set<string>()
  let pageToken: string | null = null
  let lastDone: string | null = null
  let taken = 0
  for (;;) {
    const page = await deps.messages.api.history(start, pageToken)
    for (const record of page.records) {
      if (taken >= deps.limits.maxMessagesPerPoll && lastDone !== null) {
        return storeOrLose(deps, lastDone, 'partial')
      }
      for (const added of record.added) {
        // One message can appear in several records; labels here save a messages.get.
        if (seen.has(added.id)) continue
        seen.add(added.id)
        if (hasSkippedLabel(added.labelIds)) {
          deps.messages.metrics.skipped.labels('label').inc()
          counts.skipped++
          continue
        }
        await take(deps, added.id, counts)
        taken++
      }
      lastDone = record.id
    }
    pageToken = page.nextPageToken
    // The last page: only now is the mailbox's historyId safe to store.
    if (!pageToken) return storeOrLose(deps, page.historyId, 'completed')
    await deps.keepLease()
  }
}

export async function fullSync(
  deps: SyncDeps,
  reason: 'first_run' | 'history_expired',
  counts: PollCounts,
): Promise<PollStatus> {
  const { limits } = deps
  const { api, metrics, logger, mailbox } = deps.messages
  metrics.fullSyncs.labels(reason).inc()
  logger.info('gmail full sync', { mailbox, reason })
  const { historyId } = await api.profile()
  const ids: string[] = []
  let pageToken: string | null = null
  do {
    const page = await api.messages(pageToken, 'INBOX')
    ids.push(...page.ids.slice(0, limits.fullSyncMaxMessages - ids.length))
    pageToken = page.nextPageToken
    await deps.keepLease()
  } while (pageToken && ids.length < limits.fullSyncMaxMessages)
  // Listed newest first; oldest first lets a reply find the conversation of what it answers.
  for (const id of ids.reverse()) await take(deps, id, counts)
  return storeOrLose(deps, historyId, 'completed')
}
