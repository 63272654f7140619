/**
 * API_KEYS as import inputs: one API connection per tenant holding its hashes as `api_key_hash`
 * (the edge compares a key's hash with them: worker/connections/api-keys.ts), read with the
 * Worker's own reader (shared/api-keys.ts).
 * @module
 */
import { CONNECTION_LIMITS } from '../../contract/connection'
import { API_KEYS_NAME, parseApiKeys } from '../../shared/api-keys'

const NAME = API_KEYS_NAME

export interface ApiKeysImport {
  inputs: { channel: 'api'; account: string; input: unknown }[]
  /** Tenants not imported: more hashes than one connection holds. */
  refused: { channel: 'api'; account: string; field: string; reason: string }[]
}

/** API_KEYS grouped by tenant. */
export function apiKeysInputs(raw: string | undefined, warnings: string[]): ApiKeysImport {
  const result: ApiKeysImport = { inputs: [], refused: [] }
  const byTenant = new Map<string, string[]>()
  for (const [hash, tenant] of parseApiKeys(raw, warnings, 'not imported')) {
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
