/**
 * The public API's keys in the registry: a tenant's `api` connection holds its keys as secrets
 * (field `api_key`, current and replaced) and their SHA-256 hashes as its ids, each indexed as
 * `idx:api:<sha256 hex>`. The hash of the key offered finds at most one connection (one KV get
 * on a memo miss, no loop over tenants); the key must then equal one of its live keys (constant
 * time) and the connection be active. No index entry: API_KEYS answers, as before.
 * @module
 */
import type { EventConnection } from '../../contract/connection'
import { timingSafeEqual } from '../../shared/crypto'
import { offeredKey, variablesTenant } from '../api/auth'
import type { ApiSettings } from '../api/settings'
import type { Env } from '../env'
import { logProblem } from '../log'
import { connectionByIndex, hasRegistry, liveSecrets } from './reader'

/** Whose key it is by the registry: a tenant and its connection, refused (null), or not known. */
export type RegistryKeyOwner =
  | { kind: 'owner'; tenant: string; connection: EventConnection }
  | { kind: 'refused' }
  | { kind: 'unknown' }
  /** KV out of reach, or the record unusable: the API's 503, never a guess. */
  | { kind: 'unavailable' }

export async function registryKeyOwner(
  env: Env,
  key: string,
  hash: string,
): Promise<RegistryKeyOwner> {
  if (!hasRegistry(env)) return { kind: 'unknown' }
  const lookup = await connectionByIndex(env, 'api', hash)
  if (lookup.kind === 'none') return { kind: 'unknown' }
  if (lookup.kind === 'unavailable') return { kind: 'unavailable' }
  const { record } = lookup.connection
  if (record.status !== 'active' || !record.ids.includes(hash)) {
    logProblem('warn', 'connection_refused', {
      connection: record.id,
      reason: record.status !== 'active' ? 'connection_disabled' : 'key_not_listed',
    })
    return { kind: 'refused' }
  }
  const secrets = await lookup.connection.secrets().catch(() => null)
  if (secrets === null) {
    logProblem('error', 'connection_unopenable', { connection: record.id })
    return { kind: 'unavailable' }
  }
  let matched = false
  for (const live of liveSecrets(secrets, 'api_key')) {
    if (timingSafeEqual(live, key)) matched = true
  }
  if (!matched) return { kind: 'refused' }
  return {
    kind: 'owner',
    tenant: record.account,
    connection: { id: record.id, version: record.version },
  }
}

/**
 * Who a request's key belongs to: the registry's connection when its index knows the key (it
 * wins), else API_KEYS. Null: refused (401); `unavailable`: the registry could not answer (503).
 */
export async function apiKeyOwner(
  env: Env,
  settings: Pick<ApiSettings, 'keys'>,
  authorization: string | undefined,
): Promise<{ tenant: string; connection?: EventConnection } | null | 'unavailable'> {
  const offered = await offeredKey(authorization)
  if (!offered) return null
  const registry = await registryKeyOwner(env, offered.key, offered.hash)
  if (registry.kind === 'owner') return { tenant: registry.tenant, connection: registry.connection }
  if (registry.kind === 'refused') return null
  if (registry.kind === 'unavailable') return 'unavailable'
  const tenant = variablesTenant(settings, offered.hash)
  return tenant === null ? null : { tenant }
}
