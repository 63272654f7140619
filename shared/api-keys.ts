/**
 * API_KEYS (a JSON object: SHA-256 hex of an API key → its tenant), read one way wherever it is
 * read: by the Worker's public API (worker/api/settings.ts) and by the registry's import
 * (origin/connections/import-api-keys.ts). Hex in either case is one hash, the first entry of a
 * repeated hash holds, an invalid entry is warned and skipped. Warnings name the entry's position
 * and tenant, never a hash (it names a key).
 * @module
 */

export const API_KEYS_NAME = 'API_KEYS'
/** A tenant id: it starts every message key (`{tenant}:…`), so no `:`. */
export const TENANT_ID = /^[A-Za-z0-9_-]{1,64}$/
const KEY_HASH = /^[0-9a-f]{64}$/

/**
 * Hash → tenant, in the order written. `consequence` says in a warning what a value that is not
 * a JSON object means where it is read ("no API key is accepted", "not imported").
 */
export function parseApiKeys(
  raw: string | undefined,
  warnings: string[],
  consequence: string,
): Map<string, string> {
  const keys = new Map<string, string>()
  if (raw === undefined || raw.trim() === '') return keys
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    warnings.push(`${API_KEYS_NAME} is not JSON: ${consequence}`)
    return keys
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    warnings.push(`${API_KEYS_NAME} is not a JSON object: ${consequence}`)
    return keys
  }
  entriesAsWritten(raw, parsed).forEach(([hash, tenant], index) => {
    const where = `${API_KEYS_NAME} entry ${index + 1}`
    const keyHash = hash.toLowerCase()
    if (!KEY_HASH.test(keyHash)) {
      warnings.push(`${where} is not the SHA-256 hex of a key; skipped`)
    } else if (typeof tenant !== 'string' || !TENANT_ID.test(tenant)) {
      warnings.push(`${where} names no tenant of [A-Za-z0-9_-]; skipped`)
    } else if (keys.has(keyHash)) {
      // Hex in either case is one hash: as with every per-tenant variable, the first entry holds.
      warnings.push(`${where} (${tenant}) repeats the hash of an earlier entry; the first is used`)
    } else {
      keys.set(keyHash, tenant)
    }
  })
  return keys
}

/** A JSON string token, escapes included. */
const JSON_STRING = String.raw`"(?:[^"\\]|\\.)*"`
const MEMBER = new RegExp(`(${JSON_STRING})\\s*:\\s*(${JSON_STRING})`, 'g')

/**
 * The object's members as written, repeats included: `JSON.parse` keeps the last of two equal
 * keys, so an entry pasted twice would silently move its key to the second tenant. When every
 * value is a string the members are read off the text (linear: one pass of a regex with no
 * nesting); otherwise as parsed (those entries are refused one by one anyway).
 */
function entriesAsWritten(raw: string, parsed: object): [string, unknown][] {
  const values = Object.values(parsed)
  if (!values.every((value) => typeof value === 'string')) return Object.entries(parsed)
  const members = [...raw.matchAll(MEMBER)].map((m): [string, unknown] => [
    JSON.parse(m[1] as string),
    JSON.parse(m[2] as string),
  ])
  return members.length >= values.length ? members : Object.entries(parsed)
}
