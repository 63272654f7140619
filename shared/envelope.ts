/**
 * Envelope encryption with WebCrypto, the same in Node 20 and workerd: every sealed value has a
 * data key of its own (AES-256-GCM, a random 96-bit IV), wrapped by a key-encryption key (AES-KW,
 * RFC 3394) from a {@link KeyRing} the operator holds. Rotating a KEK re-wraps data keys and never
 * touches a ciphertext; a per-value data key sees one encryption, far inside GCM's 2^32 budget.
 *
 * The additional data binds a ciphertext to where it belongs (a connection, a field, a secret's
 * kid: contract/connection.ts `secretAad`), so a value copied onto another record fails to open
 * instead of verifying another tenant's webhooks.
 *
 * Sealed form (ASCII, fits KV and a text column): `v1.<kekId>.<wrapped>.<iv>.<ciphertext>`, each
 * part base64url without padding.
 * @module
 */

const FORMAT = 'v1'
const KEK_ID = /^[A-Za-z0-9_-]{1,32}$/
/** Bounds what `open` works on before any crypto: a sealed secret is a few hundred bytes. */
export const MAX_SEALED_CHARS = 16 * 1024

export type EnvelopeErrorCode =
  | 'kek_invalid'
  | 'kek_unknown'
  | 'sealed_malformed'
  | 'sealed_unopenable'

/** A typed failure; its message names the code and the KEK id, never a key or a plaintext. */
export class EnvelopeError extends Error {
  constructor(
    readonly code: EnvelopeErrorCode,
    detail: string,
  ) {
    super(`${code}: ${detail}`)
    this.name = 'EnvelopeError'
  }
}

export interface KeyRing {
  /** The KEK new values are sealed with (the first listed). */
  readonly currentId: string
  readonly keys: ReadonlyMap<string, CryptoKey>
}

/**
 * Reads a KEK list, `id:base64key,older:base64key` (each key 32 random bytes, standard or url
 * base64): the first seals, every one listed opens. Null when unset or blank; throws
 * EnvelopeError `kek_invalid` naming the entry's position (never its value) when malformed.
 */
export async function importKeyRing(value: string | undefined): Promise<KeyRing | null> {
  const entries = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
  if (entries.length === 0) return null
  const keys = new Map<string, CryptoKey>()
  for (const [index, entry] of entries.entries()) {
    const colon = entry.indexOf(':')
    const id = entry.slice(0, colon)
    const raw = colon > 0 ? decodeBase64(entry.slice(colon + 1)) : null
    if (!KEK_ID.test(id) || raw?.byteLength !== 32 || keys.has(id)) {
      throw new EnvelopeError('kek_invalid', `entry ${index + 1} is not id:<32 bytes base64>`)
    }
    keys.set(
      id,
      await crypto.subtle.importKey('raw', raw, 'AES-KW', false, ['wrapKey', 'unwrapKey']),
    )
  }
  const [currentId] = keys.keys()
  return { currentId: currentId as string, keys }
}

/** A fresh KEK in the form {@link importKeyRing} reads: `id:<32 random bytes, base64url>`. */
export function newKekEntry(id: string): string {
  if (!KEK_ID.test(id)) throw new EnvelopeError('kek_invalid', 'id must be [A-Za-z0-9_-]{1,32}')
  return `${id}:${encodeBase64Url(crypto.getRandomValues(new Uint8Array(32)))}`
}

/** Seals `plaintext` under a new data key wrapped by the ring's current KEK. */
export async function seal(ring: KeyRing, plaintext: string, aad: string): Promise<string> {
  const kek = ring.keys.get(ring.currentId)
  if (!kek) throw new EnvelopeError('kek_unknown', `kek ${ring.currentId}`)
  const dek = (await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, true, [
    'encrypt',
  ])) as CryptoKey
  const iv = crypto.getRandomValues(new Uint8Array(12))
  const ciphertext = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: utf8(aad) },
    dek,
    utf8(plaintext),
  )
  const wrapped = await crypto.subtle.wrapKey('raw', dek, kek, 'AES-KW')
  return [FORMAT, ring.currentId, wrapped, iv, ciphertext]
    .map((part) => (typeof part === 'string' ? part : encodeBase64Url(new Uint8Array(part))))
    .join('.')
}

/** The KEK id a sealed value names (for re-wrapping under a newer KEK); null when malformed. */
export function sealedKekId(sealed: string): string | null {
  const parts = sealed.length <= MAX_SEALED_CHARS ? sealed.split('.') : []
  const kekId = parts[1]
  return parts.length === 5 && parts[0] === FORMAT && kekId && KEK_ID.test(kekId) ? kekId : null
}

/**
 * Opens a sealed value with the KEK it names and the same additional data. Throws EnvelopeError:
 * `sealed_malformed` (not this format), `kek_unknown` (a KEK this ring lacks),
 * `sealed_unopenable` (wrong key, wrong additional data, or tampered).
 */
export async function open(ring: KeyRing, sealed: string, aad: string): Promise<string> {
  const kekId = sealedKekId(sealed)
  const [, , wrapped, iv, ciphertext] = sealed.split('.').map(decodeBase64)
  if (kekId === null || !wrapped || iv?.byteLength !== 12 || !ciphertext) {
    throw new EnvelopeError('sealed_malformed', 'not a v1 sealed value')
  }
  const kek = ring.keys.get(kekId)
  if (!kek) throw new EnvelopeError('kek_unknown', `kek ${kekId}`)
  try {
    const dek = await crypto.subtle.unwrapKey('raw', wrapped, kek, 'AES-KW', 'AES-GCM', false, [
      'decrypt',
    ])
    const plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv, additionalData: utf8(aad) },
      dek,
      ciphertext,
    )
    return new TextDecoder().decode(plain)
  } catch {
    throw new EnvelopeError('sealed_unopenable', `kek ${kekId}`)
  }
}

/**
 * The same value with its data key wrapped by the ring's current KEK instead of the one it names
 * (rotating a KEK): the ciphertext is untouched and nothing is decrypted, so no additional data
 * is needed. Unchanged when it already names the current KEK. Throws as {@link open} does.
 */
export async function rewrap(ring: KeyRing, sealed: string): Promise<string> {
  const kekId = sealedKekId(sealed)
  const parts = sealed.split('.')
  const wrapped = decodeBase64(parts[2] ?? '')
  if (kekId === null || !wrapped)
    throw new EnvelopeError('sealed_malformed', 'not a v1 sealed value')
  if (kekId === ring.currentId) return sealed
  const from = ring.keys.get(kekId)
  const to = ring.keys.get(ring.currentId)
  if (!from) throw new EnvelopeError('kek_unknown', `kek ${kekId}`)
  if (!to) throw new EnvelopeError('kek_unknown', `kek ${ring.currentId}`)
  let again: ArrayBuffer
  try {
    const dek = await crypto.subtle.unwrapKey('raw', wrapped, from, 'AES-KW', 'AES-GCM', true, [
      'decrypt',
    ])
    again = await crypto.subtle.wrapKey('raw', dek, to, 'AES-KW')
  } catch {
    throw new EnvelopeError('sealed_unopenable', `kek ${kekId}`)
  }
  return [FORMAT, ring.currentId, encodeBase64Url(new Uint8Array(again)), parts[3], parts[4]].join(
    '.',
  )
}

function utf8(text: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(text) as Uint8Array<ArrayBuffer>
}

function encodeBase64Url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** Standard or url base64, padded or not; null when it is neither. */
function decodeBase64(text: string): Uint8Array<ArrayBuffer> | null {
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) return null
  try {
    const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, ''))
    const bytes = new Uint8Array(binary.length)
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
    return bytes
  } catch {
    return null
  }
}
