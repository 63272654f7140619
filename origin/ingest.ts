/**
 * Turns one verified, validated inbound event into exactly one message row, however many times it
 * arrives and on however many origin processes. Postgres decides every duplicate (the partial unique
 * indexes of migrations/); nothing in memory does, so active-active processes agree.
 *
 * A new message is one statement, so one database round trip and one transaction: the key looked
 * up, then customer, conversation, message, outbox row (`ingest_message()`, a plpgsql function in
 * migrations/). A lost race on the message key rolls back what the loser wrote, so it leaves no
 * customer, conversation or outbox row behind, and answers with the winner's ids.
 * @module
 */
import type { InboundEvent, IngestResult } from '../contract/event'
import { checkEventConnection } from './connections/ingest-guard'
import type { Database, Queryable } from './db'
import { sqlState } from './db/errors'
import { ClientGoneError } from './errors'
import { ingestAnswered } from './idempotency'
import { bindEventSignature } from './signature-bindings'
import {
  applyDeletion,
  applyEdit,
  type BatchEventRow,
  ingestEventsStatement,
  ingestNewMessage,
  type NewMessageResult,
  type StoredMessage,
} from './store'

const IGNORED: IngestResult = {
  outcome: 'ignored',
  duplicate: false,
  messageId: null,
  conversationId: null,
  customerId: null,
}

function resultFor(
  outcome: IngestResult['outcome'],
  message: Pick<StoredMessage, 'messageId' | 'conversationId' | 'customerId'>,
): IngestResult {
  return {
    outcome,
    duplicate: outcome === 'duplicate',
    messageId: message.messageId,
    conversationId: message.conversationId,
    customerId: message.customerId,
  }
}

/**
 * A replay of a known message. A different payload hash under the same key is a mismatch: the
 * first stays (it may already be downstream), the caller logs and counts it. A row that was edited
 * may have been created by the edit itself (see {@link ingestEdit}) and then holds the edit's
 * hash, so its hash proves nothing and no mismatch is claimed for it.
 */
function duplicateOf(winner: StoredMessage, event: InboundEvent): IngestResult {
  return {
    ...resultFor('duplicate', winner),
    payloadMismatch: !winner.edited && winner.payloadHash !== event.payloadHash,
  }
}

/**
 * The row of a new message (one statement, see {@link ingestNewMessage}): created, or the row
 * that already holds it, as a duplicate.
 */
async function ingestMessage(db: Queryable, event: InboundEvent): Promise<IngestResult> {
  return messageResult(event, await ingestNewMessage(db, event, null))
}

/** What ingest_message() found or did, as the answer to a new message. */
function messageResult(event: InboundEvent, { outcome, stored }: NewMessageResult): IngestResult {
  if (outcome === 'created') return resultFor('created', stored)
  return duplicateOf(stored, event)
}

/**
 * Edits update the existing row (never a second message). An edit of a message we never saw is
 * stored as the message: the edit carries the full current text, and the original may never come
 * (its delivery lost, or older than the vendor's retry window); if it does come later, it is a
 * duplicate and the edited text stays. Every edit of a stored message is one row of its history
 * (`message_edits`, written by the same statements: {@link applyEdit}, ingest_message()), the late
 * one too; a replay adds none.
 */
async function ingestEdit(db: Database, event: InboundEvent): Promise<IngestResult> {
  const edited = await applyEdit(db, event)
  if (edited) return resultFor('updated', edited)
  // Stored as the message, already edited, unless a row holds the key by now.
  const { outcome, stored } = await ingestNewMessage(db, event, event.occurredAt)
  if (outcome === 'created') return resultFor('created', stored)
  // Known: a replay, or an older edit arriving late; or the message itself committed after the
  // UPDATE above (it raced its own edit): the UPDATE is tried once more.
  const raced = await applyEdit(db, event)
  return raced ? resultFor('updated', raced) : resultFor('duplicate', stored)
}

/**
 * Deletes and undeletes move the row's deletion state, ordered by their time (the later of the
 * latest delete and the latest undelete is the state); a replay, or one overtaken by a later
 * change, is a duplicate; a message not stored yet is remembered in its tombstone (ignored), and
 * stored in that state when it lands. One statement (`apply_message_deletion()`), under the
 * message key's lock when the row is not there: a racing insert reads the tombstone, or the
 * deletion's second look finds the row.
 */
async function ingestDeletion(db: Database, event: InboundEvent): Promise<IngestResult> {
  const { outcome, stored } = await applyDeletion(db, event)
  if (!stored) return IGNORED
  return resultFor(outcome === 'updated' ? 'updated' : 'duplicate', stored)
}

export async function ingestEvent(db: Database, event: InboundEvent): Promise<IngestResult> {
  await admitEvent(db, event)
  return ingestBound(db, event)
}

/**
 * What every path that stores an event (the Worker's routes, a replay) passes first, through
 * {@link ingestEvent} or {@link ingestEvents}: an event of a disabled or deleted registry
 * connection is refused (connections/ingest-guard.ts), and a pending one-time signature is bound.
 */
async function admitEvent(db: Database, event: InboundEvent): Promise<void> {
  await checkEventConnection(db, event)
  await bindEventSignature(db, event)
}

/** An event admitted by {@link admitEvent}. */
function ingestBound(db: Database, event: InboundEvent): Promise<IngestResult> {
  // An `api` event (a message) has its answer stored with it (origin/idempotency.ts).
  if (event.idempotency) return ingestAnswered(db, event, event.idempotency, ingestMessage)
  switch (event.kind) {
    case 'message':
      return ingestMessage(db, event)
    case 'edit':
      return ingestEdit(db, event)
    case 'delete':
    case 'undelete':
      return ingestDeletion(db, event)
  }
}

/**
 * A batch (the spool consumer's, `POST /v1/events/batch`) in one statement and one transaction
 * (`ingest_events()`), each event answered as {@link ingestEvent} would answer it alone. An event
 * the statement could not take (its own SQLSTATE), and the whole batch when the statement itself
 * fails with one (a deadlock, a timeout, a value it refuses, a database without the function
 * yet), are ingested one by one instead. Each answer is the event's result, or the error that
 * event alone met. A database out of reach, or a caller gone, fails the batch: nothing is retried.
 */
export async function ingestEvents(
  db: Database,
  events: readonly InboundEvent[],
): Promise<Array<IngestResult | Error>> {
  // A disabled connection, or a pending signature binding held by another body, refuses its
  // event alone, before any row.
  const refusals = await Promise.all(events.map((event) => admissionRefusal(db, event)))
  const taken = events.filter((_, i) => !refusals[i])
  const answers = await ingestTaken(db, taken)
  let next = 0
  return events.map((_, i) => refusals[i] ?? (answers[next++] as IngestResult | Error))
}

/** The error admitting an event met (a caller gone ends the batch), or null. */
async function admissionRefusal(db: Database, event: InboundEvent): Promise<Error | null> {
  try {
    await admitEvent(db, event)
    return null
  } catch (err) {
    if (err instanceof ClientGoneError) throw err
    return err instanceof Error ? err : new Error(String(err))
  }
}

/** {@link ingestEvents} of events whose signatures are bound. */
async function ingestTaken(
  db: Database,
  events: readonly InboundEvent[],
): Promise<Array<IngestResult | Error>> {
  // An `api` event stores its answer with its row (origin/idempotency.ts): the single path only.
  const inStatement = events.filter((event) => !event.idempotency)
  let rows: BatchEventRow[] | null
  try {
    rows = inStatement.length > 0 ? await ingestEventsStatement(db, inStatement) : []
  } catch (err) {
    if (err instanceof ClientGoneError || !hasSqlState(err)) throw err
    rows = null
  }
  // In order, one at a time: an edit after its message in the batch must find it.
  const answers: Array<IngestResult | Error> = []
  let next = 0
  for (const event of events) {
    const row = event.idempotency ? undefined : rows?.[next++]
    try {
      answers.push(
        !row || row.outcome === 'failed' ? await ingestBound(db, event) : batchResult(event, row),
      )
    } catch (err) {
      if (err instanceof ClientGoneError) throw err
      answers.push(err instanceof Error ? err : new Error(String(err)))
    }
  }
  return answers
}

/** A SQL error of the statement (a SQLSTATE, here or in its cause), not a connection lost. */
function hasSqlState(err: unknown): boolean {
  return sqlState(err) !== undefined || sqlState((err as { cause?: unknown })?.cause) !== undefined
}

/** A batch row as the answer the single path gives this event's kind. */
function batchResult(event: InboundEvent, row: BatchEventRow): IngestResult {
  const { outcome, stored } = row
  if (outcome === 'ignored' || outcome === 'failed' || !stored) return IGNORED
  if (outcome === 'created' || outcome === 'updated') return resultFor(outcome, stored)
  if (event.kind === 'message') {
    return messageResult(event, { outcome, stored })
  }
  return resultFor('duplicate', stored)
}
