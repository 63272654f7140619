/**
 * The durable layer of Idempotency-Key (claims/idempotency.ts): the `idempotency_keys` rows, one
 * per (tenant, route, key), each with the request's fingerprint and the answer stored for it.
 *
 * An `api` event names its request (contract/idempotency.ts); its answer is stored in the
 * transaction that writes its message, under the message key's lock, so the answer exists
 * exactly when the message does, and a request that comes again (Redis down, its claim expired,
 * the spool delivering it late) finds it: the same answer, or 422 for another request under the
 * same key. Past its retention a row answers nothing and the next request's answer replaces it;
 * the message key comes from the key too, so the message stays one row even then, and a request
 * with other content under it is answered 422 (its message is there, with the first content).
 * @module
 */
import type { DurableAnswer, DurableAnswers, IdempotentCall } from '../claims/idempotency'
import type { InboundEvent, IngestResult } from '../contract/event'
import type { IdempotentRequest, StoredAnswer } from '../contract/idempotency'
import { problemBody } from '../contract/problem'
import type { Database, Queryable } from './db'
import { lockMessageKey } from './store'

/** The API's answer for the message an `api` event made (or found). */
export function createdAnswer(result: IngestResult): { status: number; body: unknown } {
  return {
    status: 201,
    body: {
      id: result.messageId,
      conversationId: result.conversationId,
      customerId: result.customerId,
      status: 'created',
    },
  }
}

/**
 * Ingests an `api` event once per idempotency key: a stored answer is returned (replayed, or 422
 * when the fingerprint differs) and nothing is written; else the message and its answer are.
 */
export async function ingestAnswered(
  db: Database,
  event: InboundEvent,
  request: IdempotentRequest,
  ingest: (tx: Queryable, event: InboundEvent) => Promise<IngestResult>,
): Promise<IngestResult> {
  return db.transaction(async (tx) => {
    await lockMessageKey(tx, event)
    const found = await findAnswer(tx, event.tenant, request)
    if (found) return { ...answeredBefore(), answer: replayOrReused(found, request.fingerprint) }
    const result = await ingest(tx, event)
    // Past its retention the key's answer is gone, but its message is not (the message key comes
    // from the key): other content under it is another request reusing the key, not this one.
    if (result.duplicate && result.payloadMismatch) return { ...result, answer: reusedKey() }
    const answer = createdAnswer(result)
    await saveAnswer(tx, event.tenant, request, answer)
    await sweepExpired(tx)
    return { ...result, answer: { ...answer, replayed: false } }
  })
}

function answeredBefore(): IngestResult {
  return {
    outcome: 'duplicate',
    duplicate: true,
    messageId: null,
    conversationId: null,
    customerId: null,
  }
}

function replayOrReused(found: DurableAnswer, fingerprint: string): StoredAnswer {
  if (found.fingerprint === fingerprint) {
    return { status: found.status, body: found.body, replayed: true }
  }
  return reusedKey()
}

function reusedKey(): StoredAnswer {
  return { status: 422, body: problemBody('idempotency_key_reused'), replayed: false }
}

interface AnswerRow {
  fingerprint: string
  status: number
  body: unknown
}

export async function findAnswer(
  db: Queryable,
  tenant: string,
  request: Pick<IdempotentRequest, 'route' | 'keyHash'>,
): Promise<DurableAnswer | null> {
  const rows = await db.query<AnswerRow>(
    `SELECT fingerprint, status, body FROM idempotency_keys
      WHERE tenant = $1 AND route = $2 AND key_hash = $3 AND expires_at > now()`,
    [tenant, request.route, request.keyHash],
  )
  return rows[0] ?? null
}

/** The first answer stays; an expired row is replaced (its key is a new request now). */
export async function saveAnswer(
  db: Queryable,
  tenant: string,
  request: IdempotentRequest,
  answer: { status: number; body: unknown },
): Promise<void> {
  await db.query(
    `INSERT INTO idempotency_keys (tenant, route, key_hash, fingerprint, status, body, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6::json, now() + make_interval(secs => $7))
     ON CONFLICT ON CONSTRAINT idempotency_keys_pkey DO UPDATE
       SET fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status, body = EXCLUDED.body,
           created_at = now(), expires_at = EXCLUDED.expires_at
       WHERE idempotency_keys.expires_at <= now()`,
    [
      tenant,
      request.route,
      request.keyHash,
      request.fingerprint,
      answer.status,
      JSON.stringify(answer.body),
      request.ttlSeconds,
    ],
  )
}

/** Expired rows each new answer removes: more than arrive, so the table stays one retention. */
const SWEEP_ROWS = 10

/**
 * Removes a few expired rows (oldest first). Rows another transaction holds are skipped, not
 * waited for: a sweep never blocks or deadlocks an ingest.
 */
export async function sweepExpired(db: Queryable): Promise<void> {
  await db.query(
    `DELETE FROM idempotency_keys WHERE (tenant, route, key_hash) IN (
       SELECT tenant, route, key_hash FROM idempotency_keys
        WHERE expires_at <= now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`,
    [SWEEP_ROWS],
  )
}

/** The same rows for a route of the origin's own (the middleware's `durable`). */
export function durableAnswers(db: Database): DurableAnswers {
  return {
    find: (call: IdempotentCall) => findAnswer(db, call.tenant, call),
    async save(call: IdempotentCall, answer) {
      await saveAnswer(db, call.tenant, call, answer)
      await sweepExpired(db)
    },
  }
}
