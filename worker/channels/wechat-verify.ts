/**
 * Verifying a WeChat push (wechat.ts is the channel): the query's signature under the token of the
 * account the path names, its timestamp window, and, encrypted, `msg_signature` over the
 * `<Encrypt>` element (read by a linear scan, xml-scan.ts: nothing is parsed before a signature
 * holds) and its decryption; plain, the one-time claim of the query for its body
 * ({@link OnceBinding}: the plain signature covers no body).
 * @module
 */
import { type Bytes, equalsAny, sha256Hex, utf8 } from '../../shared/crypto'
import { type TenantSecrets, verifyForTenant } from './tenant-secrets'
import type {
  HandshakeVerdict,
  OnceBinding,
  RequestParts,
  TenantVerdict,
  Verdict,
  VerifyOptions,
} from './types'
import { systemClock } from './untrusted'
import { decryptWeChat, wechatSignature } from './wechat-crypto'
import { firstElementText } from './xml-scan'

/** What verifying a push needs: the channel's settings (wechat.ts reads them). */
export interface WeChatConfig {
  /** Token(s) by account (`gh_…`): always per account, the path names it. */
  tokens: TenantSecrets
  /** EncodingAESKeys by account, current first then the previous one; listed = encrypted only. */
  aesKeys: ReadonlyMap<string, readonly string[]>
  /** The AppID each encrypted account's plaintext must end with. */
  appIds: ReadonlyMap<string, string>
}

/** An Official Account's original id (`gh_` and 12 hex digits in practice). */
export const ACCOUNT = /^gh_[A-Za-z0-9]{1,32}$/

/** How far `timestamp` may be from now: WeChat's retries come within seconds. */
export const TIMESTAMP_WINDOW_SECONDS = 300

/** A plain query's claim outlives the window either side of its timestamp. */
const ONCE_TTL_SECONDS = 2 * TIMESTAMP_WINDOW_SECONDS

/**
 * What a plain query is good for, once: its `(timestamp, nonce)` under the account (the signature
 * follows from them and the token), bound to the hash of what it came with (`GET` and its
 * `echostr`, or `POST` and the body's bytes).
 */
async function plainOnce(
  account: string,
  query: URLSearchParams,
  method: 'GET' | 'POST',
  bytes: Bytes,
): Promise<OnceBinding> {
  const head = utf8(`${method}\n`)
  const material = new Uint8Array(head.length + bytes.length) as Bytes
  material.set(head)
  material.set(bytes, head.length)
  const id = `${query.get('timestamp')}.${query.get('nonce')}`
  return {
    key: { namespace: 'wechat-signature', scope: account, id },
    hash: (await sha256Hex(material)).slice(0, 16),
    ttlSeconds: ONCE_TTL_SECONDS,
  }
}

/** The account the path names, when it is one (the secrets are looked up by it). */
const accountOf = (id: string | undefined): string | null =>
  id !== undefined && ACCOUNT.test(id) ? id : null

/**
 * The query's signature under any of the tokens (all compared, in constant time), its timestamp
 * within the window: `signature` over token, timestamp and nonce, or with the `<Encrypt>` value
 * `msg_signature` over the four.
 */
async function verifyQuery(
  tokens: readonly string[],
  query: URLSearchParams,
  options: VerifyOptions,
  encrypt?: string,
): Promise<Verdict> {
  const timestamp = query.get('timestamp') ?? ''
  const nonce = query.get('nonce') ?? ''
  if (!/^\d{1,12}$/.test(timestamp) || !/^[A-Za-z0-9]{1,64}$/.test(nonce)) {
    return { ok: false, reason: 'missing_query' }
  }
  const now = (options.nowSeconds ?? systemClock)()
  if (Math.abs(now - Number(timestamp)) > TIMESTAMP_WINDOW_SECONDS) {
    return { ok: false, reason: 'stale_timestamp' }
  }
  const signed = encrypt === undefined ? [timestamp, nonce] : [timestamp, nonce, encrypt]
  const offered = query.get(encrypt === undefined ? 'signature' : 'msg_signature')
  const expected = await Promise.all(tokens.map((token) => wechatSignature([token, ...signed])))
  return offered && equalsAny(expected, offered.toLowerCase())
    ? { ok: true }
    : { ok: false, reason: 'signature_mismatch' }
}

/** The GET of the console's "submit": the plain `signature` of the path's account, then `echostr`. */
export async function verifyWeChatHandshake(
  query: URLSearchParams,
  config: WeChatConfig,
  accountParam: string | undefined,
  options: VerifyOptions = {},
): Promise<HandshakeVerdict> {
  const echostr = query.get('echostr')
  if (!echostr || echostr.length > 128) return { ok: false, reason: 'no_echostr' }
  const account = accountOf(accountParam)
  const verdict = await verifyForTenant(config.tokens, account, (tokens) =>
    verifyQuery(tokens, query, options),
  )
  if (!verdict.ok || account === null)
    return verdict.ok ? { ok: false, reason: 'no_account' } : verdict
  return {
    ok: true,
    challenge: echostr,
    once: await plainOnce(account, query, 'GET', utf8(echostr)),
  }
}

/**
 * The plaintext XML of each verified encrypted push, for `parse`: the verifier is the only step
 * holding the account's keys, and it sees the same `parts` object the route then parses.
 */
const decrypted = new WeakMap<RequestParts, string>()

/** The plaintext of a verified encrypted push; undefined for a plain one. */
export const decryptedMessage = (parts: RequestParts): string | undefined => decrypted.get(parts)

/**
 * Verifies a push with the secrets of the account its path names (an unknown or invalid account:
 * 401), over the query and, encrypted, the `<Encrypt>` element of the bounded body: the only
 * thing read before the signature matched, by a linear scan (xml-scan.ts); nothing is parsed
 * until then.
 */
export function verifyWeChat(
  parts: RequestParts,
  config: WeChatConfig,
  accountParam: string | undefined,
  options: VerifyOptions = {},
): Promise<TenantVerdict> {
  const account = accountOf(accountParam)
  return verifyForTenant(config.tokens, account, async (tokens) => {
    const query = new URL(parts.url).searchParams
    const aesKeys = (account && config.aesKeys.get(account)) || []
    if (query.get('encrypt_type') !== 'aes') {
      // The plain signature does not cover the body: not enough once the account encrypts, and
      // otherwise good for one body only.
      if (aesKeys.length > 0 || account === null) return { ok: false, reason: 'plaintext_refused' }
      const verdict = await verifyQuery(tokens, query, options)
      if (!verdict.ok) return verdict
      return { ok: true, once: await plainOnce(account, query, 'POST', parts.body.bytes) }
    }
    const appId = account === null ? undefined : config.appIds.get(account)
    if (aesKeys.length === 0 || !appId) return { ok: false, reason: 'encryption_not_configured' }
    // Read by a linear scan, not the parser: the signature over it has not been checked yet.
    const encrypt = firstElementText(parts.body.text, 'Encrypt')
    if (!encrypt) return { ok: false, reason: 'missing_encrypt' }
    const verdict = await verifyQuery(tokens, query, options, encrypt)
    return verdict.ok ? decryptWithAny(parts, encrypt, aesKeys, appId) : verdict
  })
}

/** Current key first, then the previous one (the console's key rotation). */
async function decryptWithAny(
  parts: RequestParts,
  encrypt: string,
  aesKeys: readonly string[],
  appId: string,
): Promise<Verdict> {
  for (const key of aesKeys) {
    const message = await decryptWeChat(encrypt, key, appId)
    if (message !== null) {
      decrypted.set(parts, message)
      return { ok: true }
    }
  }
  return { ok: false, reason: 'decrypt_failed' }
}
