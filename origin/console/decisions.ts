/**
 * The gateway's decision counts as the Worker isolates flush them (`POST /v1/decisions`,
 * contract/decision-counts.ts): minute buckets added up on conflict, and the sampled keyed
 * decisions, kept a week. One statement each, whatever the batch's size.
 * @module
 */
import * as v from 'valibot'
import { DecisionBatch } from '../../contract/decision-counts'
import type { Database, Queryable } from '../db'
import { InvalidEventError } from '../errors'

/** How long sampled keyed decisions are kept; the minute counts are kept for good. */
const KEYS_KEPT_DAYS = 7
/** Old sampled keys deleted per flush at most: pruning keeps up without a long statement. */
const PRUNE_BATCH = 1_000

export function parseDecisionBatch(json: unknown): DecisionBatch {
  const parsed = v.safeParse(DecisionBatch, json)
  if (!parsed.success) throw new InvalidEventError('invalid decision counts')
  return parsed.output
}

/**
 * Records a batch once: its id goes in `gateway_decision_batches` first, in the same transaction
 * as its counts, and a batch whose id is there already (a flush resent after a timeout, a request
 * replayed within its signature's five minutes) adds nothing. Ids older than a day are pruned: a
 * signature is refused after five minutes, and an isolate resends within seconds. True when this
 * batch was new (its counts were added).
 */
export async function recordDecisionBatch(db: Database, batch: DecisionBatch): Promise<boolean> {
  const recorded = await db.transaction(async (tx) => {
    const fresh = await tx.query(
      `INSERT INTO gateway_decision_batches (id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING id`,
      [batch.id],
    )
    if (fresh.length === 0) return false
    await recordCounts(tx, batch)
    return true
  })
  await db.query(
    `DELETE FROM gateway_decision_batches WHERE id IN (
       SELECT id FROM gateway_decision_batches
        WHERE recorded_at < now() - interval '1 day' LIMIT $1)`,
    [PRUNE_BATCH],
  )
  return recorded
}

async function recordCounts(db: Queryable, batch: DecisionBatch): Promise<void> {
  if (batch.rows.length > 0) {
    await db.query(
      `INSERT INTO gateway_decisions AS g
         (bucket, channel, decision, decided_by, reason, count,
          ms_le_5, ms_le_20, ms_le_50, ms_le_200, ms_le_1000, ms_over)
       SELECT to_timestamp(r.minute), r.channel, r.decision, r."decidedBy", r.reason, r.count,
              (r.histogram->>0)::bigint, (r.histogram->>1)::bigint, (r.histogram->>2)::bigint,
              (r.histogram->>3)::bigint, (r.histogram->>4)::bigint, (r.histogram->>5)::bigint
         FROM jsonb_to_recordset($1::jsonb) AS r(minute bigint, channel text, decision text,
              "decidedBy" text, reason text, count bigint, histogram jsonb)
       ON CONFLICT (bucket, channel, decision, decided_by, reason) DO UPDATE
         SET count = g.count + EXCLUDED.count,
             ms_le_5 = g.ms_le_5 + EXCLUDED.ms_le_5, ms_le_20 = g.ms_le_20 + EXCLUDED.ms_le_20,
             ms_le_50 = g.ms_le_50 + EXCLUDED.ms_le_50, ms_le_200 = g.ms_le_200 + EXCLUDED.ms_le_200,
             ms_le_1000 = g.ms_le_1000 + EXCLUDED.ms_le_1000, ms_over = g.ms_over + EXCLUDED.ms_over`,
      [JSON.stringify(batch.rows)],
    )
  }
  if (batch.keys.length > 0) {
    await db.query(
      `INSERT INTO gateway_decision_keys
         (delivery_key, channel, decision, decided_by, reason, payload_mismatch, stored_hash,
          offered_hash, ms, decided_at)
       SELECT k."deliveryKey", k.channel, k.decision, k."decidedBy", k.reason, k."payloadMismatch",
              k."storedHash", k."offeredHash", k.ms, to_timestamp(k.at / 1000.0)
         FROM jsonb_to_recordset($1::jsonb) AS k("deliveryKey" text, channel text, decision text,
              "decidedBy" text, reason text, "payloadMismatch" boolean, "storedHash" text,
              "offeredHash" text, ms integer, at bigint)`,
      [JSON.stringify(batch.keys)],
    )
    await db.query(
      `DELETE FROM gateway_decision_keys WHERE id IN (
         SELECT id FROM gateway_decision_keys
          WHERE decided_at < now() - make_interval(days => $1) LIMIT $2)`,
      [KEYS_KEPT_DAYS, PRUNE_BATCH],
    )
  }
}
