/**
 * A replay's outcome (replay-outcome.ts) in words: the sentence `npm run failures -- replay`
 * prints after `failure {id}: `, and the result the console and the HTTP route audit. One wording,
 * so the shell, the console's flash and the audit trail say the same thing.
 * @module
 */
import { idempotencyKey } from '../outbox/downstream'
import {
  type FailureReplay,
  isResolved,
  type Replayed,
  type ReplayFailure,
  type ReplayRefusal,
} from './replay-outcome'

/** The audit's `result` column is for an operator's eye: bounded. */
const MAX_AUDIT_CHARS = 1_000

export function describeReplay(outcome: FailureReplay): string {
  switch (outcome.status) {
    case 'replayed':
      return describeReplayed(outcome.replayed)
    case 'already_resolved':
      return 'already resolved; nothing to replay'
    case 'not_found':
      return 'no such row'
    case 'refused':
      return describeRefusal(outcome.refusal)
    case 'failed':
      return describeFailure(outcome.failure)
  }
}

/** `ok: failure {id}: …` or `failed: failure {id}: …`, as `console_audit` keeps a replay. */
export function auditResult(outcome: FailureReplay): string {
  const result = isResolved(outcome) ? 'ok' : 'failed'
  return `${result}: failure ${outcome.failureId}: ${describeReplay(outcome)}`.slice(
    0,
    MAX_AUDIT_CHARS,
  )
}

/** `… ingested (outcome, message N); resolved`: an inbound row taken through the ingest path. */
function ingestedLine(
  what: string,
  ingested: string,
  messageId: string | null,
  byAnother: boolean,
): string {
  const message = messageId ? `message ${messageId}` : 'no message'
  const by = byAnother ? '; another replay resolved the row' : '; resolved'
  return `${what} ingested (${ingested}, ${message})${by}`
}

function describeReplayed(replayed: Replayed): string {
  switch (replayed.path) {
    case 'downstream': {
      const { outboxId, byAnother } = replayed
      if (!replayed.handedOff) {
        return `outbox row ${outboxId} was processed meanwhile; resolved without a hand-off`
      }
      const settled = byAnother ? 'another process settled the row' : 'resolved'
      return `outbox row ${outboxId} handed off (Idempotency-Key ${idempotencyKey(outboxId)}); ${settled}`
    }
    case 'ingest':
      return ingestedLine(
        replayed.deliveryKey,
        replayed.ingested,
        replayed.messageId,
        replayed.byAnother,
      )
    case 'gmail': {
      const what = `gmail message ${replayed.gmailId}`
      return ingestedLine(what, replayed.ingested, replayed.messageId, replayed.byAnother)
    }
    case 'gateway': {
      const lost = replayed.byAnother ? ' (resolved by another replay)' : ''
      return `${replayed.deliveryKey} classified again: ${replayed.decisions.join(', ')}; resolved${lost}`
    }
  }
}

function describeRefusal(refusal: ReplayRefusal): string {
  switch (refusal.code) {
    case 'pending':
      return (
        `pending: the relay retries it at ${refusal.nextAttemptAt} (attempt ${refusal.attempt}` +
        ` of ${refusal.maxAttempts}); only dead rows are replayed by hand`
      )
    case 'not_dead':
      return 'no longer dead (replayed or resolved meanwhile)'
    case 'stage_not_replayed':
      return `stage ${refusal.stage} is not replayed by this tool`
    case 'not_configured':
      return `configuration: ${refusal.missing}`
    case 'not_replayable':
      return `not replayable: ${refusal.reason}`
  }
}

function describeFailure(failure: ReplayFailure): string {
  switch (failure.code) {
    case 'handoff_failed': {
      const { error, attempts, retryInMs } = failure
      return retryInMs === null
        ? `hand-off failed again (${error}); dead after ${attempts} attempts`
        : `hand-off failed again (${error}); pending, next attempt in ${Math.ceil(retryInMs / 1000)} s`
    }
    case 'claim_lost':
      return 'another process took the row over; nothing written'
    case 'still_failing':
      return `still failing: ${failure.error}; the row stays dead`
    case 'not_a_customer_message':
      return `gmail message ${failure.gmailId} is labelled SENT, DRAFT, SPAM or TRASH now: not a customer message; the row stays dead`
    case 'gmail_unavailable':
      return `Gmail unavailable (${failure.error}); the row stays dead, try again later`
    case 'still_unrecognized':
      return `still unrecognized (${failure.reason}); the row stays dead`
    case 'gateway_failed':
      return `not replayed now: ${failure.error}; the row stays dead`
  }
}
