/**
 * A connection's secrets as the registry handles them: sealed under ORIGIN_KEKS bound to their
 * place (contract/connection.ts `secretAad`), shown only as a fingerprint, each with a kid of its
 * own. The plaintext exists in memory between the request and the seal, and in the publisher
 * between opening and sealing again for the edge; nowhere else.
 * @module
 */
import { secretAad } from '../../contract/connection'
import { sha256Hex } from '../../shared/crypto'
import { EnvelopeError, type KeyRing, open, seal } from '../../shared/envelope'
import { ConnectionError } from './errors'

export interface StoredSecret {
  field: string
  kid: string
  sealed: string
  fingerprint: string
  /** Null: current; else when it stops verifying. */
  notAfter: Date | null
  createdAt: Date
}

/** What the API shows of a secret: never the value, only its fingerprint. */
export async function fingerprint(secret: string): Promise<string> {
  return `sha256:${(await sha256Hex(secret)).slice(0, 8)}`
}

/**
 * The id an API connection's secret gives it, or null for a field that gives none: a key's
 * SHA-256 hex (the edge finds the connection by it), a key hash (`api_key_hash`) as it is.
 */
export async function apiIdOf(field: string, value: string): Promise<string | null> {
  if (field === 'api_key') return sha256Hex(value)
  return field === 'api_key_hash' ? value : null
}

/** A fresh kid: `k` + 12 base32 characters (60 random bits; unique within a connection). */
export function newKid(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567'
  const bytes = crypto.getRandomValues(new Uint8Array(12))
  return `k${Array.from(bytes, (byte) => alphabet[byte & 31]).join('')}`
}

/** A new secret of `connectionId`, sealed at rest. */
export async function sealSecret(
  ring: KeyRing,
  connectionId: string,
  field: string,
  plaintext: string,
  notAfter: Date | null = null,
): Promise<Omit<StoredSecret, 'createdAt'>> {
  const kid = newKid()
  return {
    field,
    kid,
    sealed: await seal(ring, plaintext, secretAad(connectionId, field, kid)),
    fingerprint: await fingerprint(plaintext),
    notAfter,
  }
}

/**
 * A stored secret opened with the ring. A key missing from ORIGIN_KEKS, or a value that does not
 * open, is the registry's configuration problem (503 `registry_disabled`), named by kid only.
 */
export async function openSecret(
  ring: KeyRing,
  connectionId: string,
  secret: Pick<StoredSecret, 'field' | 'kid' | 'sealed'>,
): Promise<string> {
  try {
    return await open(ring, secret.sealed, secretAad(connectionId, secret.field, secret.kid))
  } catch (err) {
    if (!(err instanceof EnvelopeError)) throw err
    throw new ConnectionError(
      'registry_disabled',
      `secret ${secret.kid} of ${connectionId} does not open with ORIGIN_KEKS (${err.code})`,
    )
  }
}

/** Whether a stored secret still verifies at `nowMs`. */
export const isLive = (secret: Pick<StoredSecret, 'notAfter'>, nowMs: number): boolean =>
  secret.notAfter === null || secret.notAfter.getTime() > nowMs
