/**
 * Guessing a credential, limited (both wings: the origin's console sign-in, `GET /metrics` and the
 * replay route in origin/sign-in-limit.ts, the Worker's `GET /healthz/deep`): every try is counted
 * per client address in one fixed window. A try counts as refused from the moment it starts,
 * before its body or token is read, and is taken back only when the credential was right: many
 * slow guesses at once cannot all slip into one window. Past the limit every try from that
 * address is 429 until the window ends, the right credential included. Per process or isolate,
 * bounded in memory.
 * @module
 */
import { type OperatorAccess, operatorAccess } from './operator-token'

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
 * The operator token check of a bearer route (shared/operator-token.ts) behind `limit`, for the
 * client at `address`. A route that does not exist (no token configured) counts nothing: there is
 * nothing to guess.
 */
export function limitedOperatorAccess(
  address: string,
  token: string | undefined,
  authorization: string | null | undefined,
  limit: SignInLimit,
): LimitedAccess {
  const unconfigured = operatorAccess(token, undefined)
  if (!unconfigured.ok && unconfigured.status === 404) return unconfigured
  const attempt = limit.begin(address)
  if (attempt.retryAfter > 0) {
    return {
      ok: false,
      status: 429,
      code: 'too_many_requests',
      message: 'too many refused credentials: try again later',
      retryAfter: attempt.retryAfter,
    }
  }
  const access = operatorAccess(token, authorization)
  if (access.ok) attempt.passed()
  return access
}
