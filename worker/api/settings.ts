/**
 * The public API's settings (POST /v1/messages): its keys, the browser origins each tenant
 * allows, and how long an Idempotency-Key's answer is kept. Rows of the Worker's table
 * (worker/settings.ts); parsed once per isolate and env.
 * @module
 */
import { IDEMPOTENCY_TTL_SECONDS } from '../../claims/settings'
import { rawValue, readInt, type StringEnv, setting } from '../../shared/settings'
import { parseTenantSecrets } from '../channels/tenant-secrets'
import { settingsPerIsolate } from '../per-isolate'

export const API_KEYS = setting({
  name: 'API_KEYS',
  kind: 'string',
  secret: true,
  doc: 'JSON object: SHA-256 hex of an API key → its tenant; unset: /v1/messages answers 401',
})
export const API_ALLOWED_ORIGINS = setting({
  name: 'API_ALLOWED_ORIGINS',
  kind: 'string',
  secret: false,
  doc: 'browser origins per tenant, TENANT=https://a.example|https://b.example,OTHER=…',
})
export const API_SETTINGS = [API_KEYS, API_ALLOWED_ORIGINS, IDEMPOTENCY_TTL_SECONDS] as const

export interface ApiSettings {
  /** SHA-256 hex of each key → its tenant. */
  keys: ReadonlyMap<string, string>
  /** Each tenant's allowed browser origins (`https://app.example`, no path). */
  allowedOrigins: ReadonlyMap<string, ReadonlySet<string>>
  idempotencyTtlSeconds: number
  warnings: string[]
}

/** A tenant id: it starts every message key (`{tenant}:…`), so no `:`. */
export const TENANT_ID = /^[A-Za-z0-9_-]{1,64}$/
const KEY_HASH = /^[0-9a-f]{64}$/
const ORIGIN = /^https?:\/\/[^/\s]+$/

export const apiSettingsFor = settingsPerIsolate(
  (env: object): ApiSettings => parseApiSettings(env),
)

export function parseApiSettings(env: StringEnv): ApiSettings {
  const warnings: string[] = []
  const origins = parseTenantSecrets(
    API_ALLOWED_ORIGINS.name,
    rawValue(env, API_ALLOWED_ORIGINS.name),
    { test: (id) => TENANT_ID.test(id), hint: 'of [A-Za-z0-9_-]' },
    warnings,
    { noun: 'origin', isValid: (origin) => ORIGIN.test(origin) },
  )
  return {
    keys: parseKeys(rawValue(env, API_KEYS.name), warnings),
    allowedOrigins: new Map(
      [...(origins ?? [])].map(([tenant, list]) => [tenant, new Set(list.map(lowerOrigin))]),
    ),
    idempotencyTtlSeconds: readInt(env, IDEMPOTENCY_TTL_SECONDS, warnings),
    warnings,
  }
}

const lowerOrigin = (origin: string) => origin.toLowerCase().replace(/\/$/, '')

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

/** Warnings name the entry's position and tenant, never the hash (it names a key). */
function parseKeys(raw: string | undefined, warnings: string[]): Map<string, string> {
  const keys = new Map<string, string>()
  if (raw === undefined || raw.trim() === '') return keys
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    warnings.push(`${API_KEYS.name} is not JSON: no API key is accepted`)
    return keys
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    warnings.push(`${API_KEYS.name} is not a JSON object: no API key is accepted`)
    return keys
  }
  entriesAsWritten(raw, parsed).forEach(([hash, tenant], index) => {
    const where = `${API_KEYS.name} entry ${index + 1}`
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
