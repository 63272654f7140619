/**
 * Console sign-in, sessions and CSRF. A token signs in (compared in constant time with every
 * configured one), or Cloudflare Access's assertion does (origin/console/access.ts); the session
 * is a random 32-byte id in an HttpOnly, SameSite=Strict cookie (Secure over HTTPS), of which only
 * the SHA-256 is stored, with an absolute expiry. Each session has its own CSRF token: every
 * state-changing request carries it (a form field or a header) or is refused. Nothing here logs
 * or shows a token.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import type { Context } from 'hono'
import { getCookie, setCookie } from 'hono/cookie'
import { timingSafeEqual } from '../../shared/crypto'
import type { Queryable } from '../db'
import type { ConsoleToken, Role } from './settings'

export const SESSION_COOKIE = 'console_session'
export const CSRF_FIELD = '_csrf'
export const CSRF_HEADER = 'x-csrf-token'

export interface Session {
  /** Who, in the audit: a token's name, or the email Access signed in. */
  tokenName: string
  role: Role
  csrfToken: string
  signedInWith: 'token' | 'access'
}

/** Who opens a session: a configured token, or a person Access vouched for. */
export type SignedIn =
  | (ConsoleToken & { signedInWith: 'token' })
  | { name: string; role: Role; signedInWith: 'access' }

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
const randomToken = () => randomBytes(32).toString('base64url')

/** The configured token that `offered` is, checking every one (no early exit on a match). */
export function matchToken(tokens: readonly ConsoleToken[], offered: string): ConsoleToken | null {
  let found: ConsoleToken | null = null
  for (const token of tokens) if (timingSafeEqual(offered, token.token) && !found) found = token
  return found
}

/** A new session for `who`; its id goes in the cookie, never anywhere else. */
export async function openSession(
  db: Queryable,
  who: SignedIn,
  seconds: number,
): Promise<{ id: string; session: Session }> {
  const id = randomToken()
  const csrfToken = randomToken()
  const digest = sha256(who.signedInWith === 'token' ? who.token : `access:${who.name}`)
  await db.query(
    `INSERT INTO console_sessions
       (token_hash, token_name, token_digest, role, csrf_token, signed_in_with, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))`,
    [sha256(id), who.name, digest, who.role, csrfToken, who.signedInWith, seconds],
  )
  // Expired sessions go as new ones come (bounded: one small statement per sign-in).
  await db.query(
    `DELETE FROM console_sessions WHERE token_hash IN (
       SELECT token_hash FROM console_sessions WHERE expires_at < now() LIMIT 100)`,
  )
  const session = { tokenName: who.name, role: who.role, csrfToken, signedInWith: who.signedInWith }
  return { id, session }
}

/**
 * The live session of cookie `id`: not expired, and, for a token's, signed in with a token that
 * is still configured, under the same name and role. Rotating, removing or demoting a token ends
 * its sessions at their next request (the row goes). An Access session is returned as it is: the
 * caller checks it against the request's own assertion (origin/console/sign-in.tsx).
 */
export async function findSession(
  db: Queryable,
  id: string | undefined,
  tokens: readonly ConsoleToken[],
): Promise<Session | null> {
  if (!id || id.length > 100) return null
  const rows = await db.query<{
    token_name: string
    token_digest: string
    role: Role
    csrf_token: string
    signed_in_with: Session['signedInWith']
  }>(
    `SELECT token_name, token_digest, role, csrf_token, signed_in_with FROM console_sessions
      WHERE token_hash = $1 AND expires_at > now()`,
    [sha256(id)],
  )
  const row = rows[0]
  if (!row) return null
  const session: Session = {
    tokenName: row.token_name,
    role: row.role,
    csrfToken: row.csrf_token,
    signedInWith: row.signed_in_with,
  }
  if (row.signed_in_with === 'access') return session
  const stillConfigured = tokens.some(
    (t) =>
      t.name === row.token_name &&
      t.role === row.role &&
      timingSafeEqual(sha256(t.token), row.token_digest),
  )
  if (!stillConfigured) {
    await closeSession(db, id)
    return null
  }
  return session
}

export async function closeSession(db: Queryable, id: string | undefined): Promise<void> {
  if (id) await db.query('DELETE FROM console_sessions WHERE token_hash = $1', [sha256(id)])
}

/** Served over HTTPS (directly, or behind a proxy that says so): then the cookie is Secure. */
function overHttps(c: Context): boolean {
  return c.req.url.startsWith('https:') || c.req.header('x-forwarded-proto') === 'https'
}

export function setSessionCookie(c: Context, id: string, seconds: number): void {
  setCookie(c, SESSION_COOKIE, id, {
    path: '/console',
    httpOnly: true,
    sameSite: 'Strict',
    secure: overHttps(c),
    maxAge: seconds,
  })
}

export function clearSessionCookie(c: Context): void {
  setCookie(c, SESSION_COOKIE, '', {
    path: '/console',
    httpOnly: true,
    sameSite: 'Strict',
    secure: overHttps(c),
    maxAge: 0,
  })
}

export const sessionCookie = (c: Context) => getCookie(c, SESSION_COOKIE)

/** The request carries this session's CSRF token (form field or header). */
export function csrfMatches(session: Session, offered: string | undefined): boolean {
  return typeof offered === 'string' && timingSafeEqual(offered, session.csrfToken)
}
