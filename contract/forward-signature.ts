/**
 * How the Worker proves to the origin that an event passed vendor verification, and how the origin
 * proves its answer is its own (not a login page, a proxy's error page or a redirect's target).
 *
 * Request, scheme v2: hex HMAC-SHA256(secret, `${timestamp}.${METHOD}.${route}.${body}`), sent as
 * `X-Dedup-Signature: v2=<hex>` with `X-Dedup-Timestamp: <unix seconds>` (the Standard Webhooks
 * shape). `route` is the origin's route (`/v1/events`), not the URL's path: a prefix a proxy strips
 * changes nothing, while a signature for one route is refused on another. Only `v2=` offers are
 * read: any other scheme in the header is ignored.
 *
 * Answer: hex HMAC-SHA256(secret, `answer.${status}.${requestSignature}.${body}`) in
 * `X-Dedup-Answer-Signature: v2=<hex>`, where `requestSignature` is the request's
 * `X-Dedup-Signature` header as sent: an answer is bound to its request, its status and its bytes.
 * The origin signs with the secret that verified the request, so the Worker holds it.
 *
 * The secret is `ORIGIN_SHARED_SECRET`, a comma-separated list: the first signs, every one
 * verifies, so a secret can be rotated without dropping traffic.
 * @module
 */
import { hmac, timingSafeEqual, toHex } from '../shared/crypto'
import { setting } from '../shared/settings'

/** One row in both wings' settings tables: the Worker signs with it, the origin verifies. */
export const ORIGIN_SHARED_SECRET = setting({
  name: 'ORIGIN_SHARED_SECRET',
  kind: 'secret-list',
  secret: true,
  doc: 'signs forwards to the origin and its answers: the first entry signs, every entry verifies (rotation)',
})

export const SIGNATURE_HEADER = 'x-dedup-signature'
export const TIMESTAMP_HEADER = 'x-dedup-timestamp'
export const ANSWER_SIGNATURE_HEADER = 'x-dedup-answer-signature'
/** Reject signatures older or newer than this: a captured request cannot be replayed later. */
export const FORWARD_TOLERANCE_SECONDS = 5 * 60

/** What a request signature covers besides the body and the time. */
export interface ForwardRoute {
  method: string
  /** The origin's route, e.g. `/v1/events`. */
  path: string
}

export const EVENTS_ROUTE: ForwardRoute = { method: 'POST', path: '/v1/events' }

const SCHEME = 'v2'

function requestText(timestamp: string, route: ForwardRoute, body: string): string {
  return `${timestamp}.${route.method.toUpperCase()}.${route.path}.${body}`
}

async function mac(secret: string, text: string): Promise<string> {
  return toHex(await hmac(secret, 'SHA-256', text))
}

/** The signature headers for one request. */
export async function signForward(
  secret: string,
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
  route: ForwardRoute = EVENTS_ROUTE,
): Promise<Record<string, string>> {
  const timestamp = String(nowSeconds)
  const v2 = `${SCHEME}=${await mac(secret, requestText(timestamp, route, body))}`
  return { [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: v2 }
}

export type ForwardVerdict =
  | { ok: true /** The secret that matched: the answer is signed with it. */; secret: string }
  | { ok: false; reason: 'missing_headers' | 'stale' | 'bad_signature' | 'no_secret' }

export async function verifyForward(
  secrets: readonly string[],
  route: ForwardRoute,
  body: string,
  headers: { timestamp: string | null | undefined; signature: string | null | undefined },
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<ForwardVerdict> {
  if (secrets.length === 0) return { ok: false, reason: 'no_secret' }
  const { timestamp, signature } = headers
  // Rule 1: both headers, in their documented shape.
  if (!timestamp || !signature || !/^\d{1,12}$/.test(timestamp)) {
    return { ok: false, reason: 'missing_headers' }
  }
  // Rule 2: freshness, both ways, before any HMAC work.
  if (Math.abs(nowSeconds - Number(timestamp)) > FORWARD_TOLERANCE_SECONDS) {
    return { ok: false, reason: 'stale' }
  }
  // Rule 3: any configured secret may match (rotation); compare in constant time.
  const secret = await matchingSecret(secrets, requestText(timestamp, route, body), signature)
  return secret === null ? { ok: false, reason: 'bad_signature' } : { ok: true, secret }
}

/** The value of {@link ANSWER_SIGNATURE_HEADER} for an answer to a verified request. */
export async function signAnswer(
  secret: string,
  requestSignature: string,
  status: number,
  body: string,
): Promise<string> {
  return `${SCHEME}=${await mac(secret, answerText(requestSignature, status, body))}`
}

/** True when `answerSignature` is the origin's, for this request, status and body. */
export async function verifyAnswer(
  secrets: readonly string[],
  requestSignature: string,
  status: number,
  body: string,
  answerSignature: string | null | undefined,
): Promise<boolean> {
  if (!answerSignature) return false
  const text = answerText(requestSignature, status, body)
  return (await matchingSecret(secrets, text, answerSignature)) !== null
}

function answerText(requestSignature: string, status: number, body: string): string {
  return `answer.${status}.${requestSignature}.${body}`
}

/** The first secret whose v2 MAC of `text` is among the header's offers, compared in constant time. */
async function matchingSecret(
  secrets: readonly string[],
  text: string,
  header: string,
): Promise<string | null> {
  const offered = header.split(' ').filter((s) => s.startsWith(`${SCHEME}=`))
  if (offered.length === 0) return null
  for (const secret of secrets) {
    const expected = `${SCHEME}=${await mac(secret, text)}`
    for (const candidate of offered) {
      if (timingSafeEqual(expected, candidate)) return secret
    }
  }
  return null
}
