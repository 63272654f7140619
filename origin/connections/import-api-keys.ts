/**
 * API_KEYS (JSON object: SHA-256 hex of a key → its tenant) as import inputs: one API connection
 * per tenant holding its hashes as `api_key_hash` (the edge compares a key's hash with them:
 * worker/connections/api-keys.ts). Read as the Worker reads it (worker/api/settings.ts
 * `parseKeys`; origin/ may not import worker/): hex in either case is one hash, the first entry
 * of a repeated hash holds, an invalid entry is warned and skipped. Warnings name the entry's
 * position and tenant, never a hash (it names a key).
 * @module
 */
import { CONNECTION_KINDS, CONNECTION_LIMITS } from '../../contract/connection'

const NAME = 'API_KEYS'
const KEY_HASH = /^[0-9a-f]{64}$/
/** A JSON string token, escapes included. */
const JSON_STRING = String.raw`"(?:[^"\\]|\\.)*"`
const MEMBER = new RegExp(`(${JSON_STRING})\\s*:\\s*(${JSON_STRING})`, 'g')

export interface ApiKeysImport {
  inputs: { channel: 'api'; account: string; input: unknown }[]
  /** Tenants not imported: more hashes than one connection holds. */
  refused: { channel: 'api'; account: string; field: string; reason: string }[]
}

/** API_KEYS grouped by tenant. */
export function apiKeysInputs(raw: string | undefined, warnings: string[]): ApiKeysImport {
  const result: ApiKeysImport = { inputs: [], refused: [] }
  const byTenant = new Map<string, string[]>()
  for (const [hash, tenant] of readKeys(raw, warnings)) {
    byTenant.set(tenant, [...(byTenant.get(tenant) ?? []), hash])
  }
  const most = CONNECTION_LIMITS.secretsPerField
  for (const [account, hashes] of byTenant) {
    if (hashes.length > most) {
      result.refused.push({
        channel: 'api',
        account,
        field: 'secrets.api_key_hash',
        reason: `secrets.api_key_hash: ${NAME} lists ${hashes.length} keys for this tenant, a connection holds at most ${most}; not imported (retire keys until ${most} are left, then import again)`,
      })
      continue
    }
    const input = { channel: 'api', account, secrets: { api_key_hash: hashes } }
    result.inputs.push({ channel: 'api', account, input })
  }
  return result
}

/** Hash → tenant, in the order written. */
function readKeys(raw: string | undefined, warnings: string[]): Map<string, string> {
  const keys = new Map<string, string>()
  if (raw === undefined || raw.trim() === '') return keys
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    warnings.push(`${NAME} is not JSON: not imported`)
    return keys
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    warnings.push(`${NAME} is not a JSON object: not imported`)
    return keys
  }
  const tenantId = CONNECTION_KINDS.api.account.pattern
  entriesAsWritten(raw, parsed).forEach(([hash, tenant], index) => {
    const where = `${NAME} entry ${index + 1}`
    const keyHash = hash.toLowerCase()
    if (!KEY_HASH.test(keyHash)) {
      warnings.push(`${where} is not the SHA-256 hex of a key; skipped`)
    } else if (typeof tenant !== 'string' || !tenantId.test(tenant)) {
      warnings.push(`${where} names no tenant of [A-Za-z0-9_-]; skipped`)
    } else if (keys.has(keyHash)) {
      warnings.push(`${where} (${tenant}) repeats the hash of an earlier entry; the first is used`)
    } else {
      keys.set(keyHash, tenant)
    }
  })
  return keys
}

/**
 * The object's members as written, repeats included (`JSON.parse` keeps the last of two equal
 * keys): read off the text when every value is a string, as worker/api/settings.ts does.
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
