/**
 * Payload mismatches: a vendor resent a key with other content, with both hashes (the one kept
 * for the key, the resent one's). The origin's ingest records the ones it sees; the ones Redis
 * answered come from the gateway's sampled decisions (bounded per flush: a sample, not all).
 * @module
 */
import type { InboundEvent, IngestResult } from '../../contract/event'
import type { Queryable } from '../db'

export interface Mismatch {
  layer: string
  channel: string
  deliveryKey: string
  messageId: string | null
  storedHash: string | null
  offeredHash: string | null
  seenAt: Date
}

/** Written by the ingest route, only for a mismatch (rare): one statement. */
export async function recordPayloadMismatch(
  db: Queryable,
  event: InboundEvent,
  result: IngestResult,
): Promise<void> {
  await db.query(
    `INSERT INTO payload_mismatches
       (channel, delivery_key, message_key, message_id, stored_hash, offered_hash)
     VALUES ($1, $2, $3, $4::bigint, (SELECT payload_hash FROM messages WHERE id = $4::bigint), $5)`,
    [event.channel, event.deliveryKey, event.messageKey, result.messageId, event.payloadHash],
  )
  // Kept a month: a tenant resending one key with other content must not grow the table for good.
  await db.query(
    `DELETE FROM payload_mismatches WHERE id IN (
       SELECT id FROM payload_mismatches WHERE seen_at < now() - interval '30 days' LIMIT 1000)`,
  )
}

export async function listMismatches(db: Queryable, limit = 100): Promise<Mismatch[]> {
  const rows = await db.query<Record<string, unknown>>(
    `(SELECT 'postgres' AS layer, channel, delivery_key, message_id::text, stored_hash,
             offered_hash, seen_at
        FROM payload_mismatches ORDER BY seen_at DESC, id DESC LIMIT $1)
     UNION ALL
     (SELECT k.decided_by, k.channel, k.delivery_key, m.id::text,
             coalesce(k.stored_hash, m.payload_hash), k.offered_hash, k.decided_at
        FROM gateway_decision_keys k
        LEFT JOIN messages m ON reverse(m.first_delivery_key) = reverse(k.delivery_key)
       WHERE k.payload_mismatch AND k.decided_by <> 'postgres'
       ORDER BY k.decided_at DESC LIMIT $1)
     ORDER BY seen_at DESC LIMIT $1`,
    [limit],
  )
  return rows.map((r) => ({
    layer: String(r.layer),
    channel: String(r.channel),
    deliveryKey: String(r.delivery_key),
    messageId: (r.message_id as string | null) ?? null,
    storedHash: (r.stored_hash as string | null) ?? null,
    offeredHash: (r.offered_hash as string | null) ?? null,
    seenAt: new Date(r.seen_at as string),
  }))
}
