/**
 * The SQL of the relay's new-row path, one function per statement. A row is claimed in one short
 * statement (`FOR UPDATE SKIP LOCKED` picks rows no other relay is claiming right now, and the
 * lease it sets keeps them off every other relay's list while the hand-off runs outside any
 * transaction); the outcome is written in one more. Rows that already have a downstream failure
 * belong to the retry path (origin/failures/) and are never picked here.
 * @module
 */
import type { Queryable } from '../db'
import type { OutboxRow } from './downstream'

export interface OutboxRowRecord {
  id: string
  message_id: string
  topic: string
  payload: unknown
  created_at: Date | string
}

export const OUTBOX_COLUMNS = 'o.id, o.message_id, o.topic, o.payload, o.created_at'

export function toOutboxRow(record: OutboxRowRecord): OutboxRow {
  return {
    id: String(record.id),
    messageId: String(record.message_id),
    topic: record.topic,
    payload: record.payload,
    createdAt: new Date(record.created_at).toISOString(),
  }
}

/** Oldest first; ids are bigint strings, so compare as BigInt. */
export function byId<T extends { id: string }>(a: T, b: T): number {
  const d = BigInt(a.id) - BigInt(b.id)
  return d < 0n ? -1 : d > 0n ? 1 : 0
}

/** Claims up to `limit` unprocessed, unleased rows without a failure row, oldest first. */
export async function claimNewRows(
  db: Queryable,
  limit: number,
  leaseMs: number,
): Promise<OutboxRow[]> {
  const records = await db.query<OutboxRowRecord>(
    `UPDATE outbox o
        SET relay_lease_until = now() + $2::double precision * interval '1 millisecond'
      WHERE o.id IN (
              SELECT c.id FROM outbox c
               WHERE c.processed_at IS NULL
                 AND (c.relay_lease_until IS NULL OR c.relay_lease_until < now())
                 AND NOT EXISTS (SELECT 1 FROM channel_failures f
                                  WHERE f.outbox_id = c.id AND f.stage = 'downstream')
               ORDER BY c.id
               LIMIT $1
               FOR UPDATE SKIP LOCKED)
      RETURNING ${OUTBOX_COLUMNS}`,
    [limit, leaseMs],
  )
  return records.map(toOutboxRow).sort(byId)
}

/** The hand-off succeeded. False when the row was processed already (another relay's lease ran out). */
export async function markProcessed(db: Queryable, outboxId: string): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    `UPDATE outbox SET processed_at = now(), relay_lease_until = NULL
      WHERE id = $1 AND processed_at IS NULL
      RETURNING id`,
    [outboxId],
  )
  return rows.length > 0
}
