/**
 * How the Worker proves to the origin that an event passed vendor verification.
 *
 * Signature = hex HMAC-SHA256(secret, `${timestamp}.${body}`), sent as
 * `X-Dedup-Signature: v1=<hex>` with `X-Dedup-Timestamp: <unix seconds>` (the Standard Webhooks
 * shape). The secret is `ORIGIN_SHARED_SECRET`, a comma-separated list: the first signs, every one
 * verifies, so a secret can be rotated without dropping traffic.
 * @module
 */
import { hmac, timingSafeEqual, toHex } from './crypto'
import { setting } from './settings'

/** One row in both wings' settings tables: the Worker signs with it, the origin verifies. */
export const ORIGIN_SHARED_SECRET = setting({
  name: 'ORIGIN_SHARED_SECRET',
  kind: 'secret-list',
  secret: true,
  doc: 'signs forwards to the origin: the first entry signs, every entry verifies (rotation)',
})

export const SIGNATURE_HEADER = 'x-dedup-signature'
export const TIMESTAMP_HEADER = 'x-dedup-timestamp'
/** Reject signatures older or newer than this: a captured request cannot be replayed later. */
export const FORWARD_TOLERANCE_SECONDS = 5 * 60

export async function signForward(
  secret: string,
  body: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<Record<string, string>> {
  const timestamp = String(nowSeconds)
  const mac = toHex(await hmac(secret, 'SHA-256', `${timestamp}.${body}`))
  return { [TIMESTAMP_HEADER]: timestamp, [SIGNATURE_HEADER]: `v1=${mac}` }
}

export type ForwardVerdict =
  | { ok: true }
  | { ok: false; reason: 'missing_headers' | 'stale' | 'bad_signature' | 'no_secret' }

export async function verifyForward(
  secrets: readonly string[],
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
  const offered = signature.split(' ').filter((s) => s.startsWith('v1='))
  for (const secret of secrets) {
    const expected = `v1=${toHex(await hmac(secret, 'SHA-256', `${timestamp}.${body}`))}`
    for (const candidate of offered) {
      if (timingSafeEqual(expected, candidate)) return { ok: true }
    }
  }
  return { ok: false, reason: 'bad_signature' }
}
