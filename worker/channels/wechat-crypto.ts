/**
 * WeChat's message crypto (Official Accounts, "安全模式"), in Web Crypto so it runs the same in
 * workerd and Node: the SHA-1 signatures over sorted strings, and the AES-256-CBC envelope
 * (key = base64(EncodingAESKey + "="), IV = its first 16 bytes, PKCS#7 padding to 32-byte blocks,
 * plaintext = 16 random bytes ‖ 4-byte big-endian length ‖ message ‖ AppID). Tencent's sample
 * vectors run on both runtimes (test/channels/wechat/wechat.test.ts and
 * wechat.workers.test.ts).
 * @module
 */
import { type Bytes, timingSafeEqual, toBase64, toHex, utf8 } from '../../shared/crypto'

/** `hex(sha1(join(sort(parts))))`: `signature` over token, timestamp, nonce; `msg_signature` adds Encrypt. */
export async function wechatSignature(parts: readonly string[]): Promise<string> {
  const material = [...parts].sort().join('')
  return toHex(await crypto.subtle.digest('SHA-1', utf8(material)))
}

const ENCODING_AES_KEY = /^[A-Za-z0-9+/]{43}$/
/** WeChat pads to multiples of 32 bytes (its samples' PKCS7Encoder), not AES's 16. */
const PAD_BLOCK = 32
const AES_BLOCK = 16
const RANDOM_BYTES = 16
const LENGTH_BYTES = 4

/** Whether the console would have given this EncodingAESKey (43 base64 characters). */
export const isEncodingAesKey = (value: string): boolean => ENCODING_AES_KEY.test(value)

function keyBytes(encodingAesKey: string): Bytes {
  const binary = atob(`${encodingAesKey}=`)
  return Uint8Array.from(binary, (char) => char.charCodeAt(0)) as Bytes
}

function fromBase64(text: string): Bytes | null {
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0)) as Bytes
  } catch {
    return null
  }
}

async function aesKey(encodingAesKey: string, usage: 'encrypt' | 'decrypt') {
  const raw = keyBytes(encodingAesKey)
  const key = await crypto.subtle.importKey('raw', raw, 'AES-CBC', false, [usage])
  return { key, iv: raw.slice(0, AES_BLOCK) }
}

/**
 * Raw AES-CBC decryption through Web Crypto, which insists on its own 16-byte PKCS#7: one more
 * block is appended, the encryption of a full padding block chained on the last ciphertext block,
 * so Web Crypto strips exactly that block and leaves WeChat's own padding for us to check.
 */
async function decryptRaw(encodingAesKey: string, ciphertext: Bytes): Promise<Bytes> {
  const { key, iv } = await aesKey(encodingAesKey, 'decrypt')
  const encryptKey = (await aesKey(encodingAesKey, 'encrypt')).key
  const last = ciphertext.slice(ciphertext.length - AES_BLOCK)
  const padBlock = new Uint8Array(
    await crypto.subtle.encrypt({ name: 'AES-CBC', iv: last }, encryptKey, new Uint8Array(0)),
  )
  const extended = new Uint8Array(ciphertext.length + AES_BLOCK)
  extended.set(ciphertext)
  extended.set(padBlock, ciphertext.length)
  return new Uint8Array(
    await crypto.subtle.decrypt({ name: 'AES-CBC', iv }, key, extended),
  ) as Bytes
}

/** The pad length when the last `pad` bytes all say `pad` (1..32), else 0; no early exit. */
function padLength(plain: Bytes): number {
  const pad = plain[plain.length - 1] ?? 0
  let bad = pad < 1 || pad > PAD_BLOCK || pad > plain.length ? 1 : 0
  for (let i = 1; i <= PAD_BLOCK; i++) {
    const inPad = i <= pad ? 1 : 0
    bad |= inPad & ((plain[plain.length - i] ?? 0) ^ pad ? 1 : 0)
  }
  return bad === 0 ? pad : 0
}

/**
 * The message of an `<Encrypt>` value, when this key decrypts it to a well-formed plaintext that
 * ends with `appId` (compared in constant time); null otherwise (another key, another account,
 * a broken envelope). Called only after `msg_signature` matched, so a failure tells nothing to
 * anyone without the token.
 */
export async function decryptWeChat(
  encrypted: string,
  encodingAesKey: string,
  appId: string,
): Promise<string | null> {
  const ciphertext = fromBase64(encrypted)
  if (!ciphertext || ciphertext.length === 0 || ciphertext.length % PAD_BLOCK !== 0) return null
  const plain = await decryptRaw(encodingAesKey, ciphertext).catch(() => null)
  if (!plain) return null
  const pad = padLength(plain)
  const header = RANDOM_BYTES + LENGTH_BYTES
  if (pad === 0 || plain.length - pad < header) return null
  const view = new DataView(plain.buffer, plain.byteOffset, plain.byteLength)
  const length = view.getUint32(RANDOM_BYTES)
  const end = plain.length - pad
  if (length > end - header) return null
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })
  try {
    const owner = decoder.decode(plain.subarray(header + length, end))
    if (!timingSafeEqual(owner, appId)) return null
    return decoder.decode(plain.subarray(header, header + length))
  } catch {
    return null
  }
}

/** WeChat's side of the envelope (for tests and local/send-webhook.ts): base64 ciphertext. */
export async function encryptWeChat(
  message: string,
  encodingAesKey: string,
  appId: string,
  random: Bytes = crypto.getRandomValues(new Uint8Array(RANDOM_BYTES)) as Bytes,
): Promise<string> {
  const body = utf8(message)
  const owner = utf8(appId)
  const unpadded = RANDOM_BYTES + LENGTH_BYTES + body.length + owner.length
  const pad = PAD_BLOCK - (unpadded % PAD_BLOCK)
  const plain = new Uint8Array(unpadded + pad).fill(pad)
  plain.set(random.subarray(0, RANDOM_BYTES))
  new DataView(plain.buffer).setUint32(RANDOM_BYTES, body.length)
  plain.set(body, RANDOM_BYTES + LENGTH_BYTES)
  plain.set(owner, RANDOM_BYTES + LENGTH_BYTES + body.length)
  const { key, iv } = await aesKey(encodingAesKey, 'encrypt')
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-CBC', iv }, key, plain))
  // Web Crypto added a 16-byte padding block of its own: WeChat's ciphertext is without it.
  return toBase64(sealed.subarray(0, plain.length))
}
