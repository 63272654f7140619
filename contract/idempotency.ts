/**
 * What an Idempotency-Key request carries across the wings (draft-ietf-httpapi-idempotency-key-
 * header): its scope and fingerprint, in an `api` event (contract/event.ts), and the answer the
 * origin stored for it. The protocol is in claims/idempotency.ts, the middleware that reads the
 * header in idempotency-http/middleware.ts, the Postgres rows in origin/idempotency.ts.
 * @module
 */
import * as v from 'valibot'

const Sha256Hex = v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/))

/** One request's place in the idempotency table: (tenant, route, key), and what it asked. */
export const IdempotencySchema = v.strictObject({
  /** Method and path: `POST /v1/messages`. */
  route: v.pipe(v.string(), v.minLength(1), v.maxLength(256)),
  /**
   * SHA-256 of the client's key: the idempotency table and the Redis claim hold only this. The
   * message key holds the key itself when it is short and plain (worker/api/message.ts), so an
   * operator can find a message by it: an Idempotency-Key is an id, not a credential.
   */
  keyHash: Sha256Hex,
  /** SHA-256 of method, path and canonical body (claims/idempotency-key.ts). */
  fingerprint: Sha256Hex,
  /** How long the stored answer counts (IDEMPOTENCY_TTL_SECONDS of the Worker that took it). */
  ttlSeconds: v.pipe(v.number(), v.safeInteger(), v.minValue(60), v.maxValue(30 * 86_400)),
})
export type IdempotentRequest = v.InferOutput<typeof IdempotencySchema>

/** A stored answer: its status and JSON body; `replayed` when it was stored by an earlier request. */
export interface StoredAnswer {
  status: number
  body: unknown
  replayed: boolean
}

export const StoredAnswerSchema = v.object({
  status: v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(599)),
  body: v.unknown(),
  replayed: v.boolean(),
})
