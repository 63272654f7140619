/**
 * The SQL of `channel_failures` (listing, by id) and of its downstream stage: recording a failed hand-off, claiming
 * due rows for a retry (or a dead row for a manual replay), writing each outcome, and listing.
 *
 * A claimed row is leased by pushing its `next_attempt_at` past the hand-off's bound, in the same
 * statement that picks it with `FOR UPDATE SKIP LOCKED`: relays on other pods skip it while the
 * hand-off runs. Each outcome is written only if `attempts` is still what was claimed, so a relay
 * whose lease ran out (a stalled pod) cannot overwrite a newer outcome.
 * @module
 */
import type { Queryable } from '../db'
import type { OutboxRow } from '../outbox/downstream'
import { OUTBOX_COLUMNS, type OutboxRowRecord, toOutboxRow } from '../outbox/store'

export const FAILURE_STATUSES = ['pending', 'dead', 'resolved'] as const
export type FailureStatus = (typeof FAILURE_STATUSES)[number]

/** The stage this module writes: the hand-off of an outbox row to DOWNSTREAM_URL. */
export const DOWNSTREAM_STAGE = 'downstream'

export interface Failure {
  id: string
  channel: string
  stage: string
  status: FailureStatus
  attempts: number
  outboxId: string | null
  messageId: string | null
  deliveryKey: string | null
  /** Inbound rows: where the failure was recorded (queue, gmail). */
  source: string | null
  error: string
  nextAttemptAt: string
  createdAt: string
  updatedAt: string
}

/** A failure row this caller holds, with the outbox row it is about. */
export interface ClaimedFailure {
  failureId: string
  /** `attempts` when claimed: the fence for writing the outcome. */
  attempts: number
  /** The outbox row was processed meanwhile (nothing left to hand off). */
  processed: boolean
  row: OutboxRow
}

interface FailureRecord {
  id: string
  channel: string
  stage: string
  status: FailureStatus
  attempts: number
  outbox_id: string | null
  message_id: string | null
  delivery_key: string | null
  source: string | null
  error: string
  next_attempt_at: Date | string
  created_at: Date | string
  updated_at: Date | string
}

interface ClaimedRecord extends OutboxRowRecord {
  failure_id: string
  attempts: number
  processed: boolean
}

const iso = (value: Date | string) => new Date(value).toISOString()

function toFailure(r: FailureRecord): Failure {
  return {
    id: String(r.id),
    channel: r.channel,
    stage: r.stage,
    status: r.status,
    attempts: Number(r.attempts),
    outboxId: r.outbox_id === null ? null : String(r.outbox_id),
    messageId: r.message_id === null ? null : String(r.message_id),
    deliveryKey: r.delivery_key,
    source: r.source ?? null,
    error: r.error,
    nextAttemptAt: iso(r.next_attempt_at),
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  }
}

function toClaimed(r: ClaimedRecord): ClaimedFailure {
  return {
    failureId: String(r.failure_id),
    attempts: Number(r.attempts),
    processed: r.processed,
    row: toOutboxRow(r),
  }
}

/** Joins what a claim statement's `claimed` CTE returned with its outbox rows. */
const CLAIMED_SELECT = `SELECT c.id AS failure_id, c.attempts, o.processed_at IS NOT NULL AS processed,
         ${OUTBOX_COLUMNS}
    FROM claimed c JOIN outbox o ON o.id = c.outbox_id`

/**
 * The first hand-off of a new row failed: one failure row (attempts 1), due after the first
 * backoff, or dead at once when the policy allows one attempt only. The relay's lease on the
 * outbox row is given back. Null when a failure row for this outbox row existed already.
 */
export async function recordDownstreamFailure(
  db: Queryable,
  row: OutboxRow,
  error: string,
  status: 'pending' | 'dead',
  retryInMs: number,
): Promise<string | null> {
  const rows = await db.query<{ id: string }>(
    `WITH released AS (
       UPDATE outbox SET relay_lease_until = NULL WHERE id = $1
     )
     INSERT INTO channel_failures
       (channel, stage, message_id, outbox_id, delivery_key, error, attempts, status, next_attempt_at)
     SELECT m.channel, '${DOWNSTREAM_STAGE}', m.id, $1, m.first_delivery_key, $3, 1, $4,
            now() + $5::double precision * interval '1 millisecond'
       FROM messages m WHERE m.id = $2
     ON CONFLICT (outbox_id, stage) WHERE outbox_id IS NOT NULL DO NOTHING
     RETURNING id`,
    [row.id, row.messageId, error, status, retryInMs],
  )
  return rows[0] ? String(rows[0].id) : null
}

/** Claims up to `limit` pending downstream failures that are due, soonest first. */
export async function claimDueFailures(
  db: Queryable,
  limit: number,
  leaseMs: number,
): Promise<ClaimedFailure[]> {
  const records = await db.query<ClaimedRecord>(
    `WITH claimed AS (
       UPDATE channel_failures f
          SET next_attempt_at = now() + $2::double precision * interval '1 millisecond', updated_at = now()
        WHERE f.id IN (
                SELECT d.id FROM channel_failures d
                 WHERE d.status = 'pending' AND d.stage = '${DOWNSTREAM_STAGE}'
                   AND d.next_attempt_at <= now()
                 ORDER BY d.next_attempt_at, d.id
                 LIMIT $1
                 FOR UPDATE SKIP LOCKED)
        RETURNING f.id, f.outbox_id, f.attempts
     )
     ${CLAIMED_SELECT}`,
    [limit, leaseMs],
  )
  return records.map(toClaimed)
}

/**
 * Takes a dead row back for a manual replay: pending again, leased like a retry (should the
 * replaying process die, the retry worker finishes the attempt after the lease). Null when the
 * row is not a dead downstream failure (unknown id, pending, resolved, or being replayed).
 */
export async function claimDeadFailure(
  db: Queryable,
  failureId: string,
  leaseMs: number,
): Promise<ClaimedFailure | null> {
  const records = await db.query<ClaimedRecord>(
    `WITH claimed AS (
       UPDATE channel_failures f
          SET status = 'pending', next_attempt_at = now() + $2::double precision * interval '1 millisecond',
              updated_at = now()
        WHERE f.id = $1 AND f.status = 'dead' AND f.stage = '${DOWNSTREAM_STAGE}'
          AND f.outbox_id IS NOT NULL
        RETURNING f.id, f.outbox_id, f.attempts
     )
     ${CLAIMED_SELECT}`,
    [failureId, leaseMs],
  )
  return records[0] ? toClaimed(records[0]) : null
}

/**
 * The hand-off succeeded (or the row had been processed meanwhile): the outbox row is processed
 * and the failure resolved, in one statement. `handedOff` counts the attempt. False when the
 * claim was lost (the row moved on without us); the outbox row is marked processed regardless.
 */
export async function resolveFailure(
  db: Queryable,
  claimed: ClaimedFailure,
  handedOff: boolean,
): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    `WITH processed AS (
       UPDATE outbox SET processed_at = now(), relay_lease_until = NULL
        WHERE id = $3 AND processed_at IS NULL
     )
     UPDATE channel_failures
        SET status = 'resolved', attempts = attempts + $4, updated_at = now()
      WHERE id = $1 AND status = 'pending' AND attempts = $2
      RETURNING id`,
    [claimed.failureId, claimed.attempts, claimed.row.id, handedOff ? 1 : 0],
  )
  return rows.length > 0
}

/** Another failed attempt: counted, with its error, then due again after `retryInMs`, or dead. */
export async function recordFailedAttempt(
  db: Queryable,
  claimed: ClaimedFailure,
  error: string,
  status: 'pending' | 'dead',
  retryInMs: number,
): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    `UPDATE channel_failures
        SET attempts = attempts + 1, error = $3, status = $4,
            next_attempt_at = now() + $5::double precision * interval '1 millisecond', updated_at = now()
      WHERE id = $1 AND status = 'pending' AND attempts = $2
      RETURNING id`,
    [claimed.failureId, claimed.attempts, error, status, retryInMs],
  )
  return rows.length > 0
}

export async function getFailure(db: Queryable, failureId: string): Promise<Failure | null> {
  const rows = await db.query<FailureRecord>('SELECT * FROM channel_failures WHERE id = $1', [
    failureId,
  ])
  return rows[0] ? toFailure(rows[0]) : null
}

export async function listFailures(
  db: Queryable,
  options: { status?: FailureStatus; limit: number },
): Promise<Failure[]> {
  const rows = await db.query<FailureRecord>(
    `SELECT * FROM channel_failures
      WHERE $1::text IS NULL OR status = $1
      ORDER BY id
      LIMIT $2`,
    [options.status ?? null, options.limit],
  )
  return rows.map(toFailure)
}

/** Dead replayable failures' ids (downstream and inbound), oldest first (`replay --all-dead`). */
export async function deadFailureIds(db: Queryable, limit: number): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `SELECT id FROM channel_failures
      WHERE status = 'dead'
        AND (stage = 'inbound' OR (stage = '${DOWNSTREAM_STAGE}' AND outbox_id IS NOT NULL))
      ORDER BY id LIMIT $1`,
    [limit],
  )
  return rows.map((r) => String(r.id))
}

export async function countFailuresByStatus(db: Queryable): Promise<Record<FailureStatus, number>> {
  const rows = await db.query<{ status: FailureStatus; n: number }>(
    'SELECT status, count(*)::int AS n FROM channel_failures GROUP BY status',
  )
  const counts: Record<FailureStatus, number> = { pending: 0, dead: 0, resolved: 0 }
  for (const row of rows) counts[row.status] = Number(row.n)
  return counts
}
