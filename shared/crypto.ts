/**
 * Hash and HMAC helpers shared by the Worker (workerd) and the origin (Node 20). Both runtimes have
 * Web Crypto (`crypto.subtle`), and the Worker uses it. On Node the same functions use Node's own
 * `createHash` / `createHmac`: Node runs each Web Crypto call as a thread-pool job, about 30 µs for
 * a 1 KB HMAC against 5 µs (workerd's Web Crypto is synchronous native code). Same algorithms, same
 * bytes: the official test vectors run on both.
 * @module
 */
import type * as NodeCrypto from 'node:crypto'

const encoder = new TextEncoder()

/** Node's crypto module when running on Node (not workerd, whose nodejs_compat also has one). */
const runtime = (globalThis as { navigator?: { userAgent?: string } }).navigator?.userAgent
const nodeCrypto: typeof NodeCrypto | undefined =
  runtime === 'Cloudflare-Workers' || typeof process === 'undefined'
    ? undefined
    : process.getBuiltinModule?.('node:crypto')

/** Which implementation this runtime uses (the vector tests check each runtime runs its own). */
export const CRYPTO_BACKEND: 'node:crypto' | 'web-crypto' = nodeCrypto
  ? 'node:crypto'
  : 'web-crypto'

export type Bytes = Uint8Array<ArrayBuffer>

export function utf8(text: string): Bytes {
  return encoder.encode(text) as Bytes
}

export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)
  let out = ''
  for (const b of view) out += b.toString(16).padStart(2, '0')
  return out
}

export function toBase64(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes)
  let bin = ''
  for (const b of view) bin += String.fromCharCode(b)
  return btoa(bin)
}

export async function sha256Hex(data: string | Bytes): Promise<string> {
  if (nodeCrypto) return nodeCrypto.createHash('sha256').update(data).digest('hex')
  const bytes = typeof data === 'string' ? utf8(data) : data
  return toHex(await crypto.subtle.digest('SHA-256', bytes))
}

type HmacHash = 'SHA-1' | 'SHA-256'

const NODE_HASH: Record<HmacHash, string> = { 'SHA-1': 'sha1', 'SHA-256': 'sha256' }

/**
 * Imported HMAC keys, by hash and secret. Importing a key costs more than the HMAC itself, so each
 * isolate / process imports a secret once. The map is bounded by the number of configured secrets.
 */
const keyCache = new Map<string, Promise<CryptoKey>>()

export function hmacKey(secret: string, hash: HmacHash): Promise<CryptoKey> {
  const cacheKey = `${hash}\u0000${secret}`
  let key = keyCache.get(cacheKey)
  if (!key) {
    key = crypto.subtle.importKey('raw', utf8(secret), { name: 'HMAC', hash }, false, ['sign'])
    // A failed import must not poison the cache for the life of the isolate.
    key.catch(() => keyCache.delete(cacheKey))
    keyCache.set(cacheKey, key)
  }
  return key
}

export async function hmac(
  secret: string,
  hash: HmacHash,
  message: string | Bytes,
): Promise<Bytes> {
  if (nodeCrypto) {
    const mac = nodeCrypto.createHmac(NODE_HASH[hash], secret).update(message).digest()
    return new Uint8Array(mac) as Bytes
  }
  const key = await hmacKey(secret, hash)
  const data = typeof message === 'string' ? utf8(message) : message
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, data)) as Bytes
}

/**
 * Compares two strings in time that depends only on their lengths, never on where they differ.
 * Lengths of signatures are public (fixed by the algorithm), so leaking them is harmless.
 */
export function timingSafeEqual(a: string, b: string): boolean {
  const ab = utf8(a)
  const bb = utf8(b)
  const length = Math.max(ab.length, bb.length)
  let diff = ab.length ^ bb.length
  for (let i = 0; i < length; i++) diff |= (ab[i] ?? 0) ^ (bb[i] ?? 0)
  return diff === 0
}

/**
 * Whether `offered` equals any of `candidates` (a rotation list), each in constant time, and every
 * one compared: the time taken does not say which one matched, nor where it stands in the list.
 */
export function equalsAny(candidates: readonly string[], offered: string): boolean {
  let matched = false
  for (const candidate of candidates) matched = timingSafeEqual(candidate, offered) || matched
  return matched
}

/** Splits a comma-separated secret list (rotation: new first, old kept until vendors switch). */
export function secretList(value: string | undefined): string[] {
  if (!value) return []
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
}
