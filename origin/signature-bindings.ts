/**
 * The origin's copy of one-time signature bindings (contract/signature-binding.ts): the first body
 * a signature came with wins, for as long as the signature could be presented; an expired binding
 * is taken over (its signature is refused by its timestamp window by then anyway).
 * @module
 */
import * as v from 'valibot'
import type { InboundEvent } from '../contract/event'
import {
  type BindAnswer,
  type SignatureBinding,
  SignatureBindingSchema,
} from '../contract/signature-binding'
import type { Queryable } from './db'
import { InvalidEventError, SignatureReusedError } from './errors'

export function parseSignatureBinding(json: unknown): SignatureBinding {
  const parsed = v.safeParse(SignatureBindingSchema, json)
  if (!parsed.success) throw new InvalidEventError('invalid signature binding')
  return parsed.output
}

/** Expired rows each new binding removes: more than arrive, so the table stays one window. */
const SWEEP_ROWS = 10

/** Binds `key` to `hash` unless it is bound to another: `bound` for first use or the same hash. */
export async function bindSignature(db: Queryable, binding: SignatureBinding): Promise<BindAnswer> {
  // Twice at most: a binding that expired and was swept between the two statements is free again.
  for (let tries = 0; tries < 2; tries++) {
    if (await takeBinding(db, binding)) {
      await sweepExpired(db)
      return 'bound'
    }
    // Held by a live binding (a second statement: it sees a row a concurrent first use committed).
    const held = await db.query<{ body_hash: string }>(
      'SELECT body_hash FROM signature_bindings WHERE key = $1',
      [binding.key],
    )
    if (held[0]) return held[0].body_hash === binding.hash ? 'bound' : 'other'
  }
  throw new Error('signature binding neither taken nor held')
}

/** The binding taken: no row for the key, or only an expired one. */
async function takeBinding(db: Queryable, { key, hash, ttlSeconds }: SignatureBinding) {
  const taken = await db.query(
    `INSERT INTO signature_bindings (key, body_hash, expires_at)
     VALUES ($1, $2, now() + make_interval(secs => $3))
     ON CONFLICT (key) DO UPDATE SET body_hash = EXCLUDED.body_hash, expires_at = EXCLUDED.expires_at
       WHERE signature_bindings.expires_at <= now()
     RETURNING key`,
    [key, hash, ttlSeconds],
  )
  return taken.length > 0
}

/** A few expired rows, oldest first; rows another transaction holds are skipped, not waited for. */
async function sweepExpired(db: Queryable): Promise<void> {
  await db.query(
    `DELETE FROM signature_bindings WHERE key IN (
       SELECT key FROM signature_bindings WHERE expires_at <= now()
        ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`,
    [SWEEP_ROWS],
  )
}

/**
 * An event that carries its signature's pending binding is bound first: refused when another body
 * holds it. The binding and the row are two statements: a retry after a failed ingest finds its
 * own binding again.
 */
export async function bindEventSignature(db: Queryable, event: InboundEvent): Promise<void> {
  if (!event.signatureBinding) return
  if ((await bindSignature(db, event.signatureBinding)) === 'other')
    throw new SignatureReusedError()
}
