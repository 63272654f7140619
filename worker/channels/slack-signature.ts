/**
 * Slack's request signature: `X-Slack-Signature: v0=` + hex HMAC-SHA256 of `v0:{timestamp}:{raw
 * body}` under the app's signing secret, with `X-Slack-Request-Timestamp` within five minutes.
 * Checked against Slack's published example in test/channels/support/vendor-vectors.ts.
 * @module
 */
import { type Bytes, hmac, timingSafeEqual, toHex, utf8 } from '../../shared/crypto'
import type { RequestParts, Verdict, VerifyOptions } from './types'
import { systemClock } from './untrusted'

/** Slack's documented replay window, applied both ways. */
export const SLACK_TOLERANCE_SECONDS = 5 * 60

/** `v0=` + hex HMAC-SHA256(secret, `v0:{timestamp}:{raw body}`), Slack's recipe. */
export async function slackSignature(
  secret: string,
  timestamp: string,
  body: Bytes | string,
): Promise<string> {
  const raw = typeof body === 'string' ? utf8(body) : body
  const prefix = utf8(`v0:${timestamp}:`)
  const base = new Uint8Array(prefix.length + raw.length) as Bytes
  base.set(prefix, 0)
  base.set(raw, prefix.length)
  return `v0=${toHex(await hmac(secret, 'SHA-256', base))}`
}

export async function verifySlack(
  parts: RequestParts,
  secrets: readonly string[],
  options: VerifyOptions = {},
): Promise<Verdict> {
  const timestamp = parts.headers.get('x-slack-request-timestamp')
  const signature = parts.headers.get('x-slack-signature')
  // Rule 1: both headers, the timestamp as whole seconds.
  if (!timestamp || !signature) return { ok: false, reason: 'missing_headers' }
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'malformed_timestamp' }
  // Rule 2: freshness, both ways, before any HMAC work (a captured request cannot be replayed).
  const now = (options.nowSeconds ?? systemClock)()
  const skew = now - Number(timestamp)
  if (skew > SLACK_TOLERANCE_SECONDS) return { ok: false, reason: 'stale_timestamp' }
  if (skew < -SLACK_TOLERANCE_SECONDS) return { ok: false, reason: 'future_timestamp' }
  // Rule 3: only the documented version.
  if (!signature.startsWith('v0=')) return { ok: false, reason: 'unknown_signature_version' }
  // Rule 4: any configured secret may match (rotation); constant-time compare over the raw bytes.
  for (const secret of secrets) {
    const expected = await slackSignature(secret, timestamp, parts.body.bytes)
    if (timingSafeEqual(expected, signature)) return { ok: true }
  }
  return { ok: false, reason: 'signature_mismatch' }
}
