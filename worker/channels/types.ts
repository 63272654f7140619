/**
 * The small surface every channel module exports, in the order the route calls it:
 * `verify` (over the raw bytes, before anything is parsed) → `parse` (JSON / form; throws
 * InvalidPayloadError) → `classify` (what to do with this delivery, and under which keys).
 * @module
 */

import type { RawBody } from '../../contract/body'
import type { DeliveryKey } from '../../contract/delivery-key'
import type { InboundEventDraft } from '../../contract/event'

export { type DeliveryKey, formatDeliveryKey } from '../../contract/delivery-key'

/** What a verifier sees of a request. */
export interface RequestParts {
  /** `request.url` as the Worker received it. */
  url: string
  headers: Headers
  body: RawBody
}

export interface VerifyOptions {
  /** Injectable clock (unix seconds), for tests of the replay window. */
  nowSeconds?: () => number
}

export type Verdict = { ok: true } | { ok: false; reason: string }

/** What the gateway does with one verified, parsed delivery. */
export type Delivery =
  /** A message, edit or delete: claim, forward to the origin, answer by the outcome. */
  | { action: 'forward'; key: DeliveryKey; draft: InboundEventDraft }
  /** Worth remembering but not a message (status callbacks, interactions): claim, never forward. */
  | { action: 'record'; key: DeliveryKey }
  /** Verified but nothing to do (bot echoes, other event types): 200, nothing claimed. */
  | { action: 'ignore'; reason: string }
  /** Slack's url_verification handshake: answer the challenge. */
  | { action: 'challenge'; challenge: string }

/** Every delivery but Slack's handshake: what the shared claim / forward path handles. */
export type ChannelDelivery = Exclude<Delivery, { action: 'challenge' }>

/** Unix seconds (string or number, fractional allowed) → ISO 8601; null when not a time. */
export function isoFromUnixSeconds(value: unknown): string | null {
  const seconds = typeof value === 'string' && value.trim() !== '' ? Number(value) : value
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0) return null
  const date = new Date(Math.floor(seconds * 1000))
  return Number.isNaN(date.getTime()) ? null : date.toISOString()
}

export const systemClock = (): number => Math.floor(Date.now() / 1000)

/** A non-empty string field of an untrusted object, else null. */
export function str(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null
}

/** A plain object field of an untrusted value, else null. */
export function obj(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null
}

const KEY_PART = /^[A-Za-z0-9._+-]{1,128}$/

/**
 * A vendor id that goes into a Redis key: no separators, bounded length. Vendors document these
 * as short alphanumeric ids; anything else is not a delivery we can key, so the caller answers 400.
 */
export function isKeyPart(value: string | null): value is string {
  return value !== null && KEY_PART.test(value)
}
