/**
 * What the replay of one failure row came to (replay-service.ts): a value, never a printed line
 * or an exit code. The CLI (cli-replay.ts), the console (console/replays.ts) and the HTTP route
 * (http.ts) each turn it into their own answer; replay-text.ts holds the sentence they share.
 *
 * `refused`: nothing was tried and nothing written. `failed`: tried, and the row is still not
 * resolved (dead, or pending again for the relay). Each carries a stable `code`.
 * @module
 */
import type { IngestOutcome } from '../../contract/event'

export type FailureReplay =
  /** Stored or handed off now; the row is resolved (by this replay, or `byAnother` at once). */
  | { status: 'replayed'; failureId: string; replayed: Replayed }
  /** Resolved before this replay: nothing to do. */
  | { status: 'already_resolved'; failureId: string }
  /** No row with this id (or, for the HTTP route, no dead queue row). */
  | { status: 'not_found'; failureId: string }
  | { status: 'refused'; failureId: string; refusal: ReplayRefusal }
  | { status: 'failed'; failureId: string; failure: ReplayFailure }

/** The path a replayed row went, and what it became. */
export type Replayed =
  /** Handed to DOWNSTREAM_URL under `Idempotency-Key: outbox-{id}`; `handedOff` false: it had been processed meanwhile. */
  | { path: 'downstream'; outboxId: string; handedOff: boolean; byAnother: boolean }
  /** A queue row's stored event, through the ingest of a live delivery. */
  | {
      path: 'ingest'
      deliveryKey: string
      ingested: IngestOutcome
      messageId: string | null
      byAnother: boolean
    }
  /** A Gmail row: the message fetched again and taken through the poller's path. */
  | {
      path: 'gmail'
      gmailId: string
      ingested: IngestOutcome
      messageId: string | null
      byAnother: boolean
    }
  /** An unrecognized event, classified again by the Worker's code and delivered. */
  | { path: 'gateway'; deliveryKey: string; decisions: string[]; byAnother: boolean }

/** Why a row was not tried. */
export type ReplayRefusal =
  /** The relay still retries it; only dead rows are replayed by hand. */
  | { code: 'pending'; nextAttemptAt: string; attempt: number; maxAttempts: number }
  /** Dead when looked at, not when taken: another replay (or resolution) came first. */
  | { code: 'not_dead' }
  | { code: 'stage_not_replayed'; stage: string }
  /** This process lacks the settings its path needs; `missing` names them. */
  | { code: 'not_configured'; missing: string }
  /** What was kept cannot be replayed (no event, not a valid one, another mailbox's). */
  | { code: 'not_replayable'; reason: string }

/** Why a tried replay did not resolve the row. */
export type ReplayFailure =
  /** DOWNSTREAM_URL failed again: pending for the relay (`retryInMs`), or dead (null). */
  | { code: 'handoff_failed'; error: string; attempts: number; retryInMs: number | null }
  /** Another process took the downstream row over; nothing was written. */
  | { code: 'claim_lost' }
  /** The Gmail message is still bad: recorded again with this error. */
  | { code: 'still_failing'; gmailId: string; error: string }
  /** The Gmail message is labelled SENT, DRAFT, SPAM or TRASH now. */
  | { code: 'not_a_customer_message'; gmailId: string }
  /** Gmail or its OAuth did not answer: nothing tried, the row as it was. */
  | { code: 'gmail_unavailable'; error: string }
  /** The Worker's code still cannot place the event (or refuses it). */
  | { code: 'still_unrecognized'; reason: string }
  /** The Worker did not answer in its own name, or did not deliver it all. */
  | { code: 'gateway_failed'; error: string }

/** True when the row is resolved now: replayed, or resolved before. */
export function isResolved(outcome: FailureReplay): boolean {
  return outcome.status === 'replayed' || outcome.status === 'already_resolved'
}

export function refused(failureId: string, refusal: ReplayRefusal): FailureReplay {
  return { status: 'refused', failureId, refusal }
}

export function failed(failureId: string, failure: ReplayFailure): FailureReplay {
  return { status: 'failed', failureId, failure }
}
