/**
 * The rules of an Idempotency-Key (draft-ietf-httpapi-idempotency-key-header) as the claim
 * protocol needs them: what a key may be, and the fingerprint that tells one request from another
 * under the same key. No HTTP here: idempotency-http/ reads the header and words the answers.
 * @module
 */
import { parseItem } from 'structured-headers'
import { sha256Hex } from '../shared/crypto'

/** Stripe's bound, and the issue's: 1 to 255 characters. */
export const MAX_KEY_CHARS = 255

/**
 * A bare key (Stripe's convention: no quotes): the characters a client puts in one, never those
 * that structure a field (`"`, `,`, `;`, `\`, spaces).
 */
const BARE_KEY = /^[A-Za-z0-9!#$%&'*+.^_`|~:/=@?-]+$/

export type KeyVerdict =
  | { ok: true; key: string }
  | { ok: false; code: 'idempotency_key_missing' | 'idempotency_key_malformed' }

/**
 * The key a client sent: a Structured Field string (`"8e03…"`, RFC 9651, parameters refused), or
 * the same characters bare. Two field lines arrive joined by a comma, which neither form allows.
 */
export function parseIdempotencyKey(value: string | null | undefined): KeyVerdict {
  const trimmed = value?.trim() ?? ''
  if (trimmed === '') return { ok: false, code: 'idempotency_key_missing' }
  const key = trimmed.startsWith('"') ? sfString(trimmed) : BARE_KEY.test(trimmed) ? trimmed : null
  if (key === null || key.length === 0 || key.length > MAX_KEY_CHARS) {
    return { ok: false, code: 'idempotency_key_malformed' }
  }
  return { ok: true, key }
}

function sfString(value: string): string | null {
  try {
    const [item, parameters] = parseItem(value)
    return typeof item === 'string' && parameters.size === 0 ? item : null
  } catch {
    return null
  }
}

/** JSON with every object's keys sorted: key order and whitespace are no other request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, item]) => `${JSON.stringify(k)}:${canonicalJson(item)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** SHA-256 of method, path and canonical body (the raw text when it is no JSON). */
export async function requestFingerprint(
  method: string,
  path: string,
  body: string,
): Promise<string> {
  let canonical = body
  try {
    canonical = canonicalJson(JSON.parse(body))
  } catch {
    // Not JSON: its bytes are the request.
  }
  return sha256Hex(`${method.toUpperCase()} ${path}\n${canonical}`)
}
