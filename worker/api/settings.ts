/**
 * The public API's settings (POST /v1/messages): its keys, the browser origins each tenant
 * allows, and how long an Idempotency-Key's answer is kept. Rows of the Worker's table
 * (worker/settings.ts); parsed once per isolate and env.
 * @module
 */
import { IDEMPOTENCY_TTL_SECONDS } from '../../claims/settings'
import { parseApiKeys, TENANT_ID } from '../../shared/api-keys'
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
    keys: parseApiKeys(rawValue(env, API_KEYS.name), warnings, 'no API key is accepted'),
    allowedOrigins: new Map(
      [...(origins ?? [])].map(([tenant, list]) => [tenant, new Set(list.map(lowerOrigin))]),
    ),
    idempotencyTtlSeconds: readInt(env, IDEMPOTENCY_TTL_SECONDS, warnings),
    warnings,
  }
}

const lowerOrigin = (origin: string) => origin.toLowerCase().replace(/\/$/, '')
