/**
 * The origin's side of guessing a credential, limited (shared/guess-limit.ts): one count per
 * client address, shared by a console sign-in, an SSO assertion and the bearer token of
 * `GET /metrics` and of the HTTP replay route. Per process (each origin pod counts its own).
 * Behind a proxy that hides the client's address every client shares one count: an attacker there
 * can keep operators out for a window (the CLI still works), never in.
 * @module
 */
import { getConnInfo } from '@hono/node-server/conninfo'
import type { Context } from 'hono'
import {
  type LimitedAccess,
  limitedOperatorAccess as limitedAccess,
  type SignInLimit,
} from '../shared/guess-limit'

export {
  type Attempt,
  type LimitedAccess,
  SIGN_IN_FAILURES,
  SIGN_IN_WINDOW_MS,
  type SignInLimit,
  signInLimit,
} from '../shared/guess-limit'

/** The client's address as the socket gives it (not a header a client can set), else `unknown`. */
export function clientAddress(c: Context): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown'
  } catch {
    return 'unknown'
  }
}

/** The operator token check of a bearer route behind `limit`, for this request's client. */
export function limitedOperatorAccess(
  c: Context,
  token: string | undefined,
  limit: SignInLimit,
): LimitedAccess {
  return limitedAccess(clientAddress(c), token, c.req.header('authorization'), limit)
}
