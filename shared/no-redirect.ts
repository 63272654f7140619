/**
 * Every outbound call of this system (the forward, the spool consumer and its dead-letter report,
 * the outbox's downstream, the Upstash port, Gmail) is sent with `redirect: 'manual'` and takes a
 * 3xx as a failure. Followed, a redirect turns the call into another one: an SSO wall's 302 to a
 * login page that answers 200 reads as "accepted", and a 301/302 turns a POST into a GET. Node
 * (undici) and workerd both hand back the 3xx itself under 'manual', not an opaque response.
 * @module
 */

/** Spread into every outbound fetch's options. */
export const NO_REDIRECT = { redirect: 'manual' } as const

/** A 3xx: somebody other than the callee answered; never a success. */
export function isRedirect(status: number): boolean {
  return status >= 300 && status < 400
}
