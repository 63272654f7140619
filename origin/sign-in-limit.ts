/**
 * Guessing a credential, limited: every try of an operator credential (a console sign-in, an SSO
 * assertion, the bearer token of `GET /metrics` and of the HTTP replay route) is counted per
 * client address in one fixed window, shared by all of them. A try counts as refused from the
 * moment it starts, before its body or token is read, and is taken back only when the credential
 * was right: a guess whose body is slow to arrive is counted as soon as it begins, so many slow
 * guesses at once cannot all slip into one window. Past the limit every try from that address is
 * 429 until the window ends, the right credential included. Per process (each origin pod counts
 * its own), bounded in memory. Behind a proxy that hides the client's address every client shares
 * one count: an attacker there can keep operators out for a window (the CLI still works), never in.
 * @module
 */
import { getConnInfo } from '@hono/node-server/conninfo'
import type { Context } from 'hono'
import { type OperatorAccess, operatorAccess } from '../contract/operator-token'

/** One try of a credential, counted as refused until {@link Attempt.passed}. */
export interface Attempt {
  /** Seconds until the address may try again (the try was not made), or 0: it goes ahead. */
  retryAfter: number
  /** The credential was right: this try no longer counts. */
  passed(): void
}

export interface SignInLimit {
  /** Starts one try from `address`: counted at once, unless the address is past the limit. */
  begin(address: string, nowMs?: number): Attempt
}

interface Window {
  failures: number
  endsAt: number
}

export const SIGN_IN_FAILURES = 10
export const SIGN_IN_WINDOW_MS = 5 * 60_000
/** Addresses remembered at once; past it the oldest windows go first. */
const MAX_ADDRESSES = 10_000

export function signInLimit(
  failures = SIGN_IN_FAILURES,
  windowMs = SIGN_IN_WINDOW_MS,
): SignInLimit {
  const windows = new Map<string, Window>()
  const current = (address: string, nowMs: number): Window => {
    const window = windows.get(address)
    if (window && window.endsAt > nowMs) return window
    windows.delete(address)
    if (windows.size >= MAX_ADDRESSES) {
      const oldest = windows.keys().next().value
      if (oldest !== undefined) windows.delete(oldest)
    }
    const fresh = { failures: 0, endsAt: nowMs + windowMs }
    windows.set(address, fresh)
    return fresh
  }
  return {
    begin(address, nowMs = Date.now()) {
      const window = current(address, nowMs)
      if (window.failures >= failures) {
        return { retryAfter: Math.max(1, Math.ceil((window.endsAt - nowMs) / 1000)), passed() {} }
      }
      window.failures += 1
      let counted = true
      return {
        retryAfter: 0,
        passed() {
          // The window object itself: a try that outlived its window takes nothing from the next.
          if (counted) window.failures -= 1
          counted = false
        },
      }
    },
  }
}

/** The client's address as the socket gives it (not a header a client can set), else `unknown`. */
export function clientAddress(c: Context): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

export type LimitedAccess =
  | OperatorAccess
  | {
      ok: false
      status: 429
      code: 'too_many_requests'
      message: 'too many refused credentials: try again later'
      retryAfter: number
    }

/**
 * The operator token check of a bearer route (contract/operator-token.ts) behind `limit`. A route
 * that does not exist (no token configured) counts nothing: there is nothing to guess.
 */
export function limitedOperatorAccess(
  c: Context,
  token: string | undefined,
  limit: SignInLimit,
): LimitedAccess {
  const unconfigured = operatorAccess(token, undefined)
  if (!unconfigured.ok && unconfigured.status === 404) return unconfigured
  const attempt = limit.begin(clientAddress(c))
  if (attempt.retryAfter > 0) {
    return {
      ok: false,
      status: 429,
      code: 'too_many_requests',
      message: 'too many refused credentials: try again later',
      retryAfter: attempt.retryAfter,
    }
  }
  const access = operatorAccess(token, c.req.header('authorization'))
  if (access.ok) attempt.passed()
  return access
}
