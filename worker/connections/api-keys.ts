/**
 * The public API's keys in the registry: a tenant's `api` connection holds its keys as secrets
 * (field `api_key`, current and replaced; or, for a key known only by its hash as API_KEYS
 * held it, that hash as `api_key_hash`) and their SHA-256 hashes as its ids, each indexed as
 * `idx:api:<sha256 hex>`. The hash of the key offered finds at most one connection (one KV get
 * on a memo miss, no loop over tenants); the key must then equal one of its live keys, or its hash one
 * of its live key hashes (constant time) and the connection be active. No index entry: API_KEYS answers, as before.
 * @module
 */
import type { EventConnection } from '../../contract/connection'
import { timingSafeEqual } from '../../shared/crypto'
import { offeredKey, variablesTenant } from '../api/auth'
import type { ApiSettings } from '../api/settings'
import type { Env } from '../env'
import { logProblem } from '../log'
import { connectionByIndex, hasRegistry, liveSecrets, type OpenedSecret } from './reader'

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
  if (!liveKeyMatches(secrets, key, hash)) return { kind: 'refused' }
  return {
    kind: 'owner',
    tenant: record.account,
    connection: { id: record.id, version: record.version },
  }
}

/**
 * Whether the key is one of the record's live keys: a key the registry sealed (`api_key`,
 * compared itself) or a key known only by its hash (`api_key_hash`, what API_KEYS held:
 * compared by the hash). Every candidate is compared, in constant time, so the answer's time
 * does not say which matched. Expiry works alike for both, so rotation keeps its overlap.
 */
function liveKeyMatches(secrets: readonly OpenedSecret[], key: string, hash: string): boolean {
  let matched = false
  for (const live of liveSecrets(secrets, 'api_key')) {
    if (timingSafeEqual(live, key)) matched = true
  }
  for (const live of liveSecrets(secrets, 'api_key_hash')) {
    if (timingSafeEqual(live.toLowerCase(), hash)) matched = true
  }
  return matched
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
