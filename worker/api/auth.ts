/**
 * API key authentication: `Authorization: Bearer <key>`. Only the SHA-256 of each key is
 * configured (API_KEYS), so the key offered is hashed and its hash compared with every configured
 * one in constant time: the time taken says neither which key matched nor where one differs.
 * @module
 */
import { sha256Hex, timingSafeEqual } from '../../shared/crypto'
import type { ApiSettings } from './settings'

/** The bound of a key we hash at all (a longer one is no key of ours). */
const MAX_KEY_CHARS = 512

/** The tenant of the key offered, or null (missing, malformed or unknown: all one answer). */
export async function apiTenant(
  settings: Pick<ApiSettings, 'keys'>,
  authorization: string | undefined,
): Promise<string | null> {
  const match = /^Bearer ([\x21-\x7e]+)$/i.exec(authorization?.trim() ?? '')
  const key = match?.[1]
  if (!key || key.length > MAX_KEY_CHARS) return null
  const offered = await sha256Hex(key)
  let tenant: string | null = null
  for (const [hash, owner] of settings.keys) {
    if (timingSafeEqual(hash, offered)) tenant = owner
  }
  return tenant
}
