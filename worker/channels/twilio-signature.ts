/**
 * Twilio's request signature (`X-Twilio-Signature`): base64 HMAC-SHA1 under the account's auth
 * token of the URL Twilio called, then every form parameter, sorted; a JSON body (Event Streams,
 * `bodySHA256` in the URL) is bound by its SHA-256 instead. Checked against Twilio's published
 * example in test/channels/support/vendor-vectors.ts. The number of form parameters is bounded
 * before any of this runs: the signature sorts them all.
 * @module
 */
import { hmac, sha256Hex, timingSafeEqual, toBase64 } from '../../shared/crypto'
import type { RequestParts, Verdict, VerifyOptions } from './types'

/** Parameters as received: a name may repeat. */
export type TwilioParams = ReadonlyArray<readonly [string, string]>

/**
 * base64 HMAC-SHA1(token, url + every param name+value), names in Unix (code unit) order. Values
 * of a repeated name are de-duplicated and sorted, as twilio-node and twilio-python do.
 */
export async function twilioSignature(
  authToken: string,
  url: string,
  params: TwilioParams,
): Promise<string> {
  return toBase64(await hmac(authToken, 'SHA-1', url + signedParameters(params)))
}

/**
 * What the signature covers after the URL: each name, sorted, with each of its distinct values,
 * sorted. The same for every token and URL form a request is checked against: built once.
 */
function signedParameters(params: TwilioParams): string {
  const byName = new Map<string, Set<string>>()
  for (const [name, value] of params) {
    const values = byName.get(name) ?? new Set<string>()
    values.add(value)
    byName.set(name, values)
  }
  let data = ''
  for (const name of [...byName.keys()].sort()) {
    for (const value of [...(byName.get(name) ?? [])].sort()) data += name + value
  }
  return data
}

/**
 * The most form parameters a request may have before its signature is computed. Twilio's
 * messaging webhooks send a few dozen (ten media add twenty); computing the signature sorts every
 * name, and 256 KiB of distinct ones (34,000) cost hundreds of ms of CPU to refuse a forgery.
 */
export const MAX_TWILIO_PARAMETERS = 1_000

/** Whether a form body has at most {@link MAX_TWILIO_PARAMETERS} parameters: `&`s, counted. */
export function withinParameterBound(body: string): boolean {
  let count = 1
  for (let at = body.indexOf('&'); at >= 0; at = body.indexOf('&', at + 1)) {
    if (++count > MAX_TWILIO_PARAMETERS) return false
  }
  return true
}

export interface TwilioVerifyOptions extends VerifyOptions {
  /** PUBLIC_BASE_URL: when set, the URL Twilio signed is this + the request's path and query. */
  publicBaseUrl?: string | null
}

/** The URL Twilio signed, as configured: the public base when one is set, else `request.url`. */
export function signedUrl(requestUrl: string, publicBaseUrl?: string | null): string {
  if (!publicBaseUrl) return requestUrl
  const url = new URL(requestUrl)
  return `${publicBaseUrl.replace(/\/+$/, '')}${url.pathname}${url.search}`
}

/**
 * Twilio keeps the port for some products and drops it for others, so (like twilio-node) both
 * forms are tried: with an explicit port (the scheme's default when none is given) and without.
 */
export function portVariants(url: string): string[] {
  const parsed = new URL(url)
  const withoutPort = new URL(url)
  withoutPort.port = ''
  const userInfo = parsed.username
    ? `${parsed.username}${parsed.password ? `:${parsed.password}` : ''}@`
    : ''
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80')
  const withPort = `${parsed.protocol}//${userInfo}${parsed.hostname}:${port}${parsed.pathname}${parsed.search}`
  return [withoutPort.toString(), withPort]
}

export async function verifyTwilio(
  parts: RequestParts,
  authTokens: readonly string[],
  options: TwilioVerifyOptions = {},
): Promise<Verdict> {
  // Rule 1: the signature header.
  const signature = parts.headers.get('x-twilio-signature')
  if (!signature) return { ok: false, reason: 'missing_headers' }
  // Rule 2: the URL Twilio signed (public base behind a proxy), with and without the port.
  let url: string
  try {
    url = signedUrl(parts.url, options.publicBaseUrl)
  } catch {
    return { ok: false, reason: 'unparseable_url' }
  }
  // Rule 3: a JSON body is bound by `bodySHA256` in the signed URL, and the signature covers the
  // URL alone; a form body is bound by signing every parameter (never a whitelist).
  const bodyHash = new URL(url).searchParams.get('bodySHA256')
  let params: TwilioParams
  if (bodyHash !== null) {
    if (!timingSafeEqual(await sha256Hex(parts.body.bytes), bodyHash.toLowerCase())) {
      return { ok: false, reason: 'body_hash_mismatch' }
    }
    params = []
  } else {
    if (!withinParameterBound(parts.body.text)) return { ok: false, reason: 'too_many_parameters' }
    params = [...new URLSearchParams(parts.body.text)]
  }
  // Rule 4: any configured token may match (rotation), compared in constant time.
  const signed = signedParameters(params)
  for (const token of authTokens) {
    for (const candidate of portVariants(url)) {
      const expected = toBase64(await hmac(token, 'SHA-1', candidate + signed))
      if (timingSafeEqual(expected, signature)) return { ok: true }
    }
  }
  return { ok: false, reason: 'signature_mismatch' }
}
