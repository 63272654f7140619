/**
 * Refused sign-ins, counted per client address in a fixed window: past the limit every sign-in
 * from that address is answered 429 until the window ends, the right token included, so a token
 * cannot be guessed at the console's speed. Per process (each origin pod counts its own), bounded
 * in memory. Behind a proxy that hides the client's address, every client shares one count: an
 * attacker there can keep operators out of the console for a window (the CLI still works), never
 * in.
 * @module
 */

export interface SignInLimit {
  /** Seconds until `address` may try again, or 0 when it may now. */
  retryAfter(address: string, nowMs?: number): number
  /** One refused sign-in from `address`. */
  refused(address: string, nowMs?: number): void
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
  const current = (address: string, nowMs: number): Window | undefined => {
    const window = windows.get(address)
    if (window && window.endsAt <= nowMs) {
      windows.delete(address)
      return undefined
    }
    return window
  }
  return {
    retryAfter(address, nowMs = Date.now()) {
      const window = current(address, nowMs)
      if (!window || window.failures < failures) return 0
      return Math.ceil((window.endsAt - nowMs) / 1000)
    },
    refused(address, nowMs = Date.now()) {
      const window = current(address, nowMs)
      if (window) {
        window.failures += 1
        return
      }
      if (windows.size >= MAX_ADDRESSES) {
        const oldest = windows.keys().next().value
        if (oldest !== undefined) windows.delete(oldest)
      }
      windows.set(address, { failures: 1, endsAt: nowMs + windowMs })
    },
  }
}
