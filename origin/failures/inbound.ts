/**
 * Inbound failures: events the gateway had already answered "ok" for that could not be stored,
 * kept in `channel_failures` with stage 'inbound' until an operator replays them.
 *
 * - source 'queue': the Worker's dead-letter consumer (the spool queue gave up on an event after
 *   its retries) posts the normalized event to `POST /v1/failures/inbound`.
 * - source 'gmail': the Gmail poller could not fetch or parse one message; it keeps the Gmail
 *   message id (`source_ref`) and moves on, so one message never stalls its mailbox. Its replay
 *   fetches the message again (origin/gmail/replay.ts), whether or not an event was kept.
 *
 * One row per delivery key (unique index `channel_failures_inbound_key`): recording it again
 * updates the row. A replay runs the stored event through {@link ingestEvent}, the same idempotent
 * path as a live delivery, so replaying twice, or replaying an event that landed meanwhile, is one
 * row; then its Redis claim, `spooled` since the queue took it, says `done` (as the spool
 * consumer's does when an event lands), so the vendor's next copy is a duplicate at Redis.
 * @module
 */

import type { ClaimStore } from '../../claims'
import {
  finalizeEvent,
  type InboundEventDraft,
  type IngestResult,
  parseInboundEvent,
} from '../../contract/event'
import type { Database, Queryable } from '../db'
import { ingestEvent } from '../ingest'

export const INBOUND_STAGE = 'inbound'
export const INBOUND_SOURCES = ['queue', 'gmail'] as const
export type InboundSource = (typeof INBOUND_SOURCES)[number]

/** Stored error text is bounded: it is for an operator's eye, not a log archive. */
const MAX_ERROR_CHARS = 2_000

export interface InboundFailureInput {
  channel: string
  deliveryKey: string
  source: InboundSource
  /** The normalized event as the gateway forwarded it; null when there is none (Gmail fetch). */
  event: unknown
  /** The source's own id, e.g. the Gmail message id. */
  sourceRef?: string | null
  error: string
  /** Attempts made before giving up (the queue's retries, the poller's tries). */
  attempts: number
}

/**
 * Records (or refreshes) a dead inbound event. Returns the row id. A row already resolved stays
 * resolved (its message is stored: a report that comes again, a dead-letter consumer's own retry
 * after a lost answer, a Gmail re-fetch of it, changes nothing).
 */
export async function recordInboundFailure(
  db: Queryable,
  input: InboundFailureInput,
): Promise<string> {
  const rows = await db.query<{ id: string }>(
    `INSERT INTO channel_failures
       (channel, stage, delivery_key, source, source_ref, event, error, attempts, status)
     VALUES ($1, '${INBOUND_STAGE}', $2, $3, $4, $5::jsonb, $6, $7, 'dead')
     ON CONFLICT (delivery_key) WHERE stage = '${INBOUND_STAGE}' DO UPDATE
       SET event = coalesce(EXCLUDED.event, channel_failures.event),
           source_ref = coalesce(EXCLUDED.source_ref, channel_failures.source_ref),
           error = EXCLUDED.error,
           attempts = greatest(channel_failures.attempts, EXCLUDED.attempts),
           -- Resolved stays resolved: the message was stored (a late report, a re-fetch).
           status = CASE WHEN channel_failures.status = 'resolved' THEN 'resolved' ELSE 'dead' END,
           updated_at = now()
     RETURNING id`,
    [
      input.channel,
      input.deliveryKey,
      input.source,
      input.sourceRef ?? null,
      input.event === null || input.event === undefined ? null : JSON.stringify(input.event),
      input.error.slice(0, MAX_ERROR_CHARS),
      Math.max(0, Math.trunc(input.attempts)),
    ],
  )
  return String((rows[0] as { id: string }).id)
}

export interface DeadInboundFailure {
  id: string
  channel: string
  deliveryKey: string
  source: string | null
  sourceRef: string | null
  event: unknown
}

/** A dead inbound row, or null (unknown id, not inbound, not dead). */
export async function getDeadInboundFailure(
  db: Queryable,
  id: string,
): Promise<DeadInboundFailure | null> {
  const rows = await db.query<{
    id: string
    channel: string
    delivery_key: string
    source: string | null
    source_ref: string | null
    event: unknown
  }>(
    `SELECT id, channel, delivery_key, source, source_ref, event FROM channel_failures
      WHERE id = $1 AND stage = '${INBOUND_STAGE}' AND status = 'dead'`,
    [id],
  )
  const r = rows[0]
  if (!r) return null
  return {
    id: String(r.id),
    channel: r.channel,
    deliveryKey: r.delivery_key,
    source: r.source,
    sourceRef: r.source_ref,
    event: r.event,
  }
}

export type InboundReplayOutcome =
  | { outcome: 'resolved'; result: IngestResult }
  /** The stored event cannot be ingested (not a valid event, or none kept). Stays dead. */
  | { outcome: 'not_replayable'; reason: string }
  /** Another replay resolved it first. */
  | { outcome: 'claim_lost'; result: IngestResult }

/**
 * Replays a dead inbound event through the ingest path, then settles its claim in `claims` (the
 * Worker's Redis; null: none). The row is marked resolved only if it is still dead, so two
 * operators replaying at once make one row (ingest decides) and one resolution. Database errors
 * propagate (the row stays dead).
 */
export async function replayInboundEvent(
  db: Database,
  failure: DeadInboundFailure,
  claims: ClaimStore | null = null,
): Promise<InboundReplayOutcome> {
  if (failure.event === null) {
    return { outcome: 'not_replayable', reason: 'no event was kept for it' }
  }
  const parsed = parseInboundEvent(await asStoredByNow(failure.event))
  if (!parsed.ok) return { outcome: 'not_replayable', reason: parsed.message }
  const result = await ingestEvent(db, parsed.event)
  // Best effort: Redis out of reach leaves the claim `spooled`, and Postgres still decides a copy.
  await claims?.replayed(failure.deliveryKey, parsed.event.payloadHash).catch(() => false)
  return (await resolveInboundFailure(db, failure.id, result.messageId))
    ? { outcome: 'resolved', result }
    : { outcome: 'claim_lost', result }
}

/**
 * Gateways before 2026-12-02 kept a batch item the event schema refused as its draft (no `v`,
 * no `payloadHash`): finalized here as the gateway does, so the replay parses what it would have
 * kept. Anything else is returned as stored.
 */
async function asStoredByNow(stored: unknown): Promise<unknown> {
  const draft = stored as Partial<InboundEventDraft & { v: unknown; payloadHash: unknown }> | null
  const isDraft =
    typeof draft === 'object' &&
    draft !== null &&
    draft.v === undefined &&
    draft.payloadHash === undefined &&
    typeof draft.sender === 'object' &&
    draft.sender !== null &&
    typeof draft.body === 'string'
  if (!isDraft) return stored
  try {
    return await finalizeEvent(draft as InboundEventDraft)
  } catch {
    return stored // a field of the wrong type: the schema names it
  }
}

/**
 * Marks a dead inbound row resolved (its event is now stored, as `messageId` when known). False
 * when it was not dead any more: another replay resolved it first.
 */
export async function resolveInboundFailure(
  db: Queryable,
  id: string,
  messageId: string | null,
): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    `UPDATE channel_failures
        SET status = 'resolved', message_id = coalesce($2, message_id), updated_at = now()
      WHERE id = $1 AND status = 'dead'
      RETURNING id`,
    [id, messageId],
  )
  return rows.length > 0
}
