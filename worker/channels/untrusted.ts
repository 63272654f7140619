/**
 * Reading what a vendor sent: every field of a payload is untrusted until it has a shape. These
 * return a value of the expected kind or a neutral one (null, empty), never throw, but for the
 * body itself (parseJsonObject, an InvalidPayloadError the route answers 400).
 * @module
 */
import { InvalidPayloadError } from '../errors'

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

/** The JSON object of an untrusted body; anything else is an InvalidPayloadError about `what`. */
export function parseJsonObject(text: string, what: string): Record<string, unknown> {
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (err) {
    throw new InvalidPayloadError(`${what} is not valid JSON`, { cause: err })
  }
  const object = obj(parsed)
  if (!object) throw new InvalidPayloadError(`${what} is not a JSON object`)
  return object
}

/** An array field of an untrusted value, else empty. */
export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

/** A plain object field of an untrusted value, else null. */
export function obj(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null
}

const KEY_PART = /^[A-Za-z0-9._+-]{1,128}$/

/**
 * A short plain token (an event type, a status name) fit to be part of a log reason or a key as it
 * is. Never the test of whether a vendor id is kept: that is {@link vendorId}'s.
 */
export function isKeyPart(value: string | null): value is string {
  return value !== null && KEY_PART.test(value)
}

/** The longest vendor id kept, in UTF-8 bytes: Meta's message ids run to about 150 characters. */
export const MAX_VENDOR_ID_BYTES = 400

/**
 * A vendor's id (a message, event, user or chat id) as it is, whatever its spelling: a non-empty
 * string of at most `maxBytes` UTF-8 bytes, else null. Its spelling decides nothing: a delivery
 * key writes it through contract/delivery-key.ts `keyPart`, a message key holds it as it is.
 */
export function vendorId(value: unknown, maxBytes = MAX_VENDOR_ID_BYTES): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxBytes) return null
  return new TextEncoder().encode(value).byteLength <= maxBytes ? value : null
}

/** A vendor's type name as part of a reason code (`line_type_follow`); `other` when it is no token. */
export function reasonPart(value: string | null): string {
  return value !== null && isKeyPart(value) ? value.slice(0, 48) : 'other'
}
