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
 * A vendor id that goes into a Redis key: no separators, bounded length. Vendors document these
 * as short alphanumeric ids; anything else is not a delivery we can key, so the caller answers 400.
 */
export function isKeyPart(value: string | null): value is string {
  return value !== null && KEY_PART.test(value)
}
