/**
 * API key authentication: `Authorization: Bearer <key>`. Only the SHA-256 of each key is
 * configured (API_KEYS), so the key offered is hashed and its hash compared with every configured
 * one in constant time: the time taken says neither which key matched nor where one differs. A
 * key the registry indexes is its connection's instead (worker/connections/api-keys.ts).
 * @module
 */
import { sha256Hex, timingSafeEqual } from '../../shared/crypto'
import type { ApiSettings } from './settings'

/** The bound of a key we hash at all (a longer one is no key of ours). */
const MAX_KEY_CHARS = 512

/** The key a request offers, and its SHA-256 hex; null when missing or malformed. */
export async function offeredKey(
  authorization: string | undefined,
): Promise<{ key: string; hash: string } | null> {
  const match = /^Bearer ([\x21-\x7e]+)$/i.exec(authorization?.trim() ?? '')
  const key = match?.[1]
  if (!key || key.length > MAX_KEY_CHARS) return null
  return { key, hash: await sha256Hex(key) }
}

/** The tenant of a key's hash by API_KEYS, or null (unknown). */
export function variablesTenant(
  settings: Pick<ApiSettings, 'keys'>,
  offered: string,
): string | null {
  let tenant: string | null = null
  for (const [hash, owner] of settings.keys) {
    if (timingSafeEqual(hash, offered)) tenant = owner
  }
  return tenant
}

/** The tenant of the key offered, or null (missing, malformed or unknown: all one answer). */
export async function apiTenant(
  settings: Pick<ApiSettings, 'keys'>,
  authorization: string | undefined,
): Promise<string | null> {
  const offered = await offeredKey(authorization)
  return offered ? variablesTenant(settings, offered.hash) : null
}
