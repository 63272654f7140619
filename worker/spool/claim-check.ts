/**
 * The claim check: an event too large for a queue message waits in R2 (the SPOOL_BODIES bucket),
 * and its message carries the object's key (`eventKey`) instead. The same for both queues: a
 * dead letter of such an event carries the same key. The consumer that is done with a message
 * (the spool consumer once the origin took the event, the dead-letter consumer once the origin
 * recorded it) deletes the object; an object left behind (a send that failed after the put, a
 * crash) is an orphan that the bucket's lifecycle rule expires.
 *
 * The key is `spool/` and a random id: it names no tenant, sender or secret.
 * @module
 */
import { jsonBytes, LIMITS } from '../../contract/event'
import { withTimeout } from './timeout'

/** Cloudflare Queues refuses messages over 128,000 bytes (serialization included): keep clear. */
export const MAX_SPOOL_MESSAGE_BYTES = 120_000

/** Every object of the claim check starts with this (the lifecycle rule's prefix). */
export const EVENT_KEY_PREFIX = 'spool/'

export type EventBodies = Pick<R2Bucket, 'put' | 'get' | 'delete'>

/** A queue message with an event: inline, or in R2 under `eventKey`. */
export type Packed<M extends { event: unknown }> =
  | M
  | (Omit<M, 'event'> & { event?: undefined; eventKey: string })

export type ClaimCheckErrorCode =
  | 'message_too_large'
  | 'bodies_not_bound'
  | 'event_body_missing'
  | 'event_body_too_large'
  | 'event_body_unreadable'

/** Why a message could not be packed or unpacked; R2's own failures pass through as they are. */
export class ClaimCheckError extends Error {
  constructor(
    readonly code: ClaimCheckErrorCode,
    detail: string,
  ) {
    super(`${code}: ${detail}`)
    this.name = 'ClaimCheckError'
  }
}

/**
 * The message as it can go on a queue: itself when it fits one, else its event put in R2 (within
 * `timeoutMs`) and the message carrying the key. Throws {@link ClaimCheckError} when it cannot.
 */
export async function packMessage<M extends { event: unknown }>(
  bodies: EventBodies | null,
  message: Packed<M>,
  timeoutMs: number,
): Promise<Packed<M>> {
  const bytes = jsonBytes(message)
  if (bytes <= MAX_SPOOL_MESSAGE_BYTES) return message
  if (message.event === undefined) {
    throw new ClaimCheckError('message_too_large', `${bytes} bytes with its event in R2`)
  }
  if (!bodies) throw new ClaimCheckError('bodies_not_bound', `${bytes} bytes and no SPOOL_BODIES`)
  const eventKey = `${EVENT_KEY_PREFIX}${crypto.randomUUID()}`
  const json = JSON.stringify(message.event)
  await withTimeout(
    bodies.put(eventKey, json, { httpMetadata: { contentType: 'application/json' } }),
    timeoutMs,
    'R2 put',
  )
  const { event: _, ...rest } = message
  return { ...rest, eventKey } as Packed<M>
}

/**
 * A message as it came off a queue, with its event inline again (read from R2 when it has an
 * `eventKey`, within `timeoutMs`), and that key, for {@link deleteEventBody} once done. Throws
 * {@link ClaimCheckError} when the object is gone or too large, or R2's error.
 */
export async function unpackMessage(
  bodies: EventBodies | null,
  body: unknown,
  timeoutMs: number,
): Promise<{ body: unknown; eventKey: string | null }> {
  const eventKey = eventKeyOf(body)
  if (eventKey === null) return { body, eventKey }
  if (!bodies) throw new ClaimCheckError('bodies_not_bound', 'the event is in R2')
  const object = await withTimeout(bodies.get(eventKey), timeoutMs, 'R2 get')
  if (!object) throw new ClaimCheckError('event_body_missing', 'no such object (expired?)')
  // Written by the producer within LIMITS.eventBytes; anything larger is not ours to read.
  if (object.size > LIMITS.eventBytes) {
    await object.body.cancel()
    throw new ClaimCheckError('event_body_too_large', `${object.size} bytes`)
  }
  const text = await withTimeout(object.text(), timeoutMs, 'R2 read')
  let event: unknown
  try {
    event = JSON.parse(text)
  } catch {
    // Not what the producer wrote: no retry can read it; a dead letter says so.
    throw new ClaimCheckError('event_body_unreadable', 'not JSON')
  }
  return { body: { ...(body as object), event }, eventKey }
}

/** A queue message read back: its body, its event's key, and why its event could not be read. */
export interface ReadBack {
  body: unknown
  eventKey: string | null
  unreadable: { code: ClaimCheckErrorCode; message: string } | null
}

/**
 * The message's body with its event read back from R2, and its key. An object that is gone
 * (expired, deleted by hand) or not one of ours (too large) leaves the body as it is
 * (`unreadable` says why): the spool consumer dead-letters it as unreadable (unless its claim says
 * it landed already: a message delivered again after its ack), the dead-letter consumer records
 * it with what is known. R2 failing or unbound throws: the message is retried on the normal
 * schedule (retries.ts, `eachGuarded`).
 */
export async function readBack(
  bodies: EventBodies | null,
  body: unknown,
  timeoutMs: number,
): Promise<ReadBack> {
  try {
    const unpacked = await unpackMessage(bodies, body, timeoutMs)
    return { ...unpacked, unreadable: null }
  } catch (err) {
    if (!(err instanceof ClaimCheckError) || err.code === 'bodies_not_bound') throw err
    const unreadable = { code: err.code, message: `its event in R2: ${err.message}` }
    return { body, eventKey: null, unreadable }
  }
}

/** The R2 key a message names, or null (its event is inline, or it is not a spool message). */
export function eventKeyOf(body: unknown): string | null {
  const key = (body as { eventKey?: unknown } | null)?.eventKey
  return typeof key === 'string' && key.startsWith(EVENT_KEY_PREFIX) ? key : null
}

/** Done with a message: its event's object goes (nothing to do for an inline event). */
export async function deleteEventBody(
  bodies: EventBodies | null,
  eventKey: string | null,
  timeoutMs = DELETE_TIMEOUT_MS,
): Promise<void> {
  if (bodies && eventKey !== null)
    await withTimeout(bodies.delete(eventKey), timeoutMs, 'R2 delete')
}

/** A delete that takes longer is left to the bucket's lifecycle rule (the event is delivered). */
const DELETE_TIMEOUT_MS = 2_000
