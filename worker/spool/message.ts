/**
 * What travels through the spool queues. Sent as JSON (`contentType: 'json'`), so an operator can
 * read a message in Cloudflare's dashboard, and small: the normalized event (already verified and
 * validated), never the vendor's raw body. An event too large for a queue message travels as a
 * claim check (claim-check.ts): the event in R2, the message carrying its key (`eventKey`).
 *
 *   spool queue         SpoolMessage: one event the origin could not take when it arrived
 *   dead-letter queue   DeadMessage: the same, with why and after how many attempts it was given
 *                       up; or a bare SpoolMessage when Cloudflare moved it there itself (its
 *                       `max_retries` ran out, e.g. the consumer kept crashing)
 * @module
 */
import { type InboundEvent, parseInboundEvent } from '../../contract/event'

/** A dead letter's error is for an operator's eye (the origin keeps 2,000 characters of it). */
const MAX_ERROR_CHARS = 2_000

export interface SpoolMessage {
  v: 2
  /** The claim's Redis key without the deployment prefix (`dedup:{namespace}:{scope}:{id}`). */
  claimKey: string
  event: InboundEvent
  /** Epoch ms when it was queued, for the age in log lines. */
  queuedAt: number
  /**
   * The claim's dedup TTL, so the consumer's `done` lives as long as the channel's claims do.
   * Absent (the producer was given none): DEDUP_TTL_SECONDS.
   */
  ttlSeconds?: number
}

export interface DeadMessage extends Omit<SpoolMessage, 'event'> {
  /** As it was queued; possibly not a valid event (that may be why it died). */
  event: unknown
  dead: { attempts: number; error: string; at: number }
}

/** A message given up on: what was queued, with after how many attempts and why. */
export function deadMessage(
  queued: Pick<DeadMessage, 'claimKey' | 'queuedAt' | 'event'>,
  attempts: number,
  error: string,
): DeadMessage {
  const dead = { attempts, error: error.slice(0, MAX_ERROR_CHARS), at: Date.now() }
  return { v: 2, ...queued, dead }
}

export function spoolMessage(
  claimKey: string,
  event: InboundEvent,
  ttlSeconds?: number,
  now = Date.now(),
): SpoolMessage {
  return { v: 2, claimKey, event, queuedAt: now, ...(ttlSeconds ? { ttlSeconds } : {}) }
}

export type DecodedSpoolMessage =
  | { ok: true; message: SpoolMessage }
  /** Not forwardable (hand-made, truncated, another version): straight to the dead letters. */
  | { ok: false; reason: string; claimKey: string | null; event: unknown }

/** Reads a spool message back; `reason` names what was wrong, never a value. */
export function decodeSpoolMessage(body: unknown): DecodedSpoolMessage {
  const raw = (body ?? {}) as Partial<SpoolMessage>
  const claimKey =
    typeof raw.claimKey === 'string' && raw.claimKey.startsWith('dedup:') ? raw.claimKey : null
  const event = raw.event ?? null
  if (typeof body !== 'object' || body === null || raw.v !== 2 || claimKey === null) {
    return { ok: false, reason: 'not a spool message (v2)', claimKey, event }
  }
  const parsed = parseInboundEvent(event)
  if (!parsed.ok) return { ok: false, reason: parsed.message, claimKey, event }
  const queuedAt = typeof raw.queuedAt === 'number' ? raw.queuedAt : 0
  const ttl = raw.ttlSeconds
  const ttlSeconds = Number.isSafeInteger(ttl) && (ttl as number) >= 60 ? { ttlSeconds: ttl } : {}
  return { ok: true, message: { v: 2, claimKey, event: parsed.event, queuedAt, ...ttlSeconds } }
}

/** What the dead-letter consumer reports to the origin for any message on the dead queue. */
export interface DeadReport {
  channel: string
  deliveryKey: string
  event: Record<string, unknown>
  error: string
  attempts: number
}

/** `messageId` names a message whose body says nothing about its delivery (one row each). */
export function deadReport(
  body: unknown,
  deliveredAttempts: number,
  messageId: string,
): DeadReport {
  const raw = (body ?? {}) as Partial<DeadMessage>
  const event =
    typeof raw.event === 'object' && raw.event !== null
      ? (raw.event as Record<string, unknown>)
      : { unreadable: true }
  const channel = typeof event.channel === 'string' ? event.channel.slice(0, 32) : 'unknown'
  const deliveryKey =
    typeof event.deliveryKey === 'string'
      ? event.deliveryKey.slice(0, 512)
      : typeof raw.claimKey === 'string'
        ? raw.claimKey.slice(0, 512)
        : `unreadable:${messageId}`
  const dead = raw.dead
  return dead && typeof dead.attempts === 'number' && typeof dead.error === 'string'
    ? { channel, deliveryKey, event, error: dead.error, attempts: dead.attempts }
    : {
        channel,
        deliveryKey,
        event,
        error: 'moved to the dead-letter queue by Cloudflare (max_retries exhausted)',
        attempts: deliveredAttempts,
      }
}
