/**
 * Who is signed in to the console, and how one signs in: the token form (`POST /login`), or
 * Cloudflare Access's assertion (origin/console/access.ts), which signs a person in on their
 * first page and is checked again on every request of their session: the same email, the same
 * role, or the session ends. Every try of either credential goes through the origin's limit on
 * refused credentials (origin/sign-in-limit.ts) before anything is read. Every request past the
 * gate has a session, and a POST its CSRF token.
 * @module
 */
import type { Context, MiddlewareHandler } from 'hono'
import { BodyOverLimitError, readBoundedBody } from '../../shared/body'
import { audit } from '../audit'
import type { Database } from '../db'
import type { Logger } from '../log'
import { clientAddress, type SignInLimit } from '../sign-in-limit'
import { ACCESS_HEADER, type AccessVerifier } from './access'
import { LoginPage } from './pages/login'
import {
  CSRF_FIELD,
  CSRF_HEADER,
  clearSessionCookie,
  closeSession,
  csrfMatches,
  findSession,
  matchToken,
  openSession,
  type Session,
  type SignedIn,
  sessionCookie,
  setSessionCookie,
} from './session'
import type { ConsoleConfig } from './settings'

export type ConsoleEnv = { Variables: { session: Session; form: Record<string, string> } }

export interface SignInDeps {
  db: Database
  config: ConsoleConfig
  logger: Logger
  signIns: SignInLimit
  /** Null: Access is not a way in (tokens only). */
  access: AccessVerifier | null
}

/**
 * A console form is a few fields, or a connection's ids (up to 1,000 of up to 32 characters, 64 KiB
 * as JSON at most: origin/connections/model.ts); anything larger is refused before it is parsed.
 */
const MAX_FORM_BYTES = 96 * 1024
/** Cloudflare Access's own sign-out, on the application's host name. */
const ACCESS_LOGOUT = '/cdn-cgi/access/logout'

export function loginPage(deps: SignInDeps) {
  return async (c: Context<ConsoleEnv>) => {
    if (deps.access && c.req.header(ACCESS_HEADER)) {
      const signedIn = await accessSignIn(deps, c)
      return signedIn instanceof Response ? signedIn : c.redirect('/console', 303)
    }
    return c.html(<LoginPage noTokens={deps.config.tokens.length === 0} access={!!deps.access} />)
  }
}

export function tokenSignIn({ db, config, logger, signIns }: SignInDeps) {
  return async (c: Context<ConsoleEnv>) => {
    // No session yet, so no CSRF token: a sign-in posted from another site is refused by origin.
    if (!sameSite(c)) return c.text('cross-site sign-in refused', 403)
    const address = clientAddress(c)
    // Counted before the form is read: a guess whose body is slow counts from its first byte.
    const attempt = signIns.begin(address)
    if (attempt.retryAfter > 0) return tooMany(c, attempt.retryAfter)
    const form = (await readForm(c)) ?? {}
    const who = matchToken(config.tokens, form.token ?? '')
    if (!who) {
      logger.warn('console sign-in refused', { address })
      return c.html(<LoginPage error="That token does not sign in." />, 401)
    }
    attempt.passed()
    await startSession(db, c, { ...who, signedInWith: 'token' }, config.sessionSeconds)
    return c.redirect('/console', 303)
  }
}

export function signOut(db: Database) {
  return async (c: Context<ConsoleEnv>) => {
    await closeSession(db, sessionCookie(c))
    clearSessionCookie(c)
    // Else Access's assertion, still sent, would sign the same person in again at once.
    const next = c.get('session').signedInWith === 'access' ? ACCESS_LOGOUT : '/console/login'
    return c.redirect(next, 303)
  }
}

/** Refused (403) unless the session is an operator's: replays, bulk runs and their cancel. */
export function operatorOnly(c: Context<ConsoleEnv>): Response | null {
  return c.get('session').role === 'operator' ? null : c.text('operators only', 403)
}

/** Everything behind it has a live session; a POST, the session's CSRF token too. */
export function sessionGate(deps: SignInDeps): MiddlewareHandler<ConsoleEnv> {
  const { db, config, logger } = deps
  return async (c, next) => {
    let session = await findSession(db, sessionCookie(c), config.tokens)
    if (session?.signedInWith === 'access') {
      const held = await accessHolds(deps, c, session)
      if (held === 'unavailable') return keysUnavailable(c)
      if (held === 'ends') {
        await closeSession(db, sessionCookie(c))
        clearSessionCookie(c)
        session = null
      }
    }
    if (!session && deps.access && c.req.method === 'GET' && c.req.header(ACCESS_HEADER)) {
      const signedIn = await accessSignIn(deps, c)
      if (signedIn instanceof Response) return signedIn
      session = signedIn
    }
    if (!session) {
      if (c.req.method === 'GET') return c.redirect('/console/login', 303)
      return c.text('sign in first', 401)
    }
    c.set('session', session)
    if (c.req.method === 'POST') {
      const form = await readForm(c)
      // Said as what it is, not as the CSRF token it would otherwise lack.
      if (!form) return c.text('form too large', 413)
      if (!csrfMatches(session, form[CSRF_FIELD] ?? c.req.header(CSRF_HEADER))) {
        logger.warn('console request refused: CSRF token missing or wrong', { path: c.req.path })
        return c.text('CSRF token missing or wrong', 403)
      }
      c.set('form', form)
    }
    await next()
  }
}

/**
 * The request's assertion, verified, as a new session: its page, or the page that says why not.
 * A refused assertion counts as a refused credential; a valid one of someone without a role, or
 * keys that could not be fetched, are no guess and do not.
 */
async function accessSignIn(deps: SignInDeps, c: Context<ConsoleEnv>): Promise<Session | Response> {
  const { db, config, logger, access } = deps
  if (!access) return c.redirect('/console/login', 303)
  const address = clientAddress(c)
  const attempt = deps.signIns.begin(address)
  if (attempt.retryAfter > 0) return tooMany(c, attempt.retryAfter)
  const verdict = await access.verify(c.req.header(ACCESS_HEADER))
  const guess = !verdict.ok && (verdict.reason === 'refused' || verdict.reason === 'missing')
  if (!guess) attempt.passed()
  if (!verdict.ok) {
    logger.warn('console sign-in with Cloudflare Access refused', {
      address,
      reason: verdict.reason,
    })
    if (verdict.reason === 'unavailable') return keysUnavailable(c)
    if (verdict.reason === 'no_role') {
      const error = `Cloudflare Access signed you in as ${verdict.email}, who has no console role.`
      return c.html(<LoginPage error={error} access />, 403)
    }
    const error = 'That Cloudflare Access assertion does not sign in.'
    return c.html(<LoginPage error={error} access />, 401)
  }
  const { email, role } = verdict.identity
  const who: SignedIn = { name: email, role, signedInWith: 'access' }
  return startSession(db, c, who, config.sessionSeconds)
}

/** An Access session holds while this request's assertion is valid for the same person and role. */
async function accessHolds(
  deps: SignInDeps,
  c: Context<ConsoleEnv>,
  session: Session,
): Promise<'holds' | 'ends' | 'unavailable'> {
  if (!deps.access) return 'ends'
  const verdict = await deps.access.verify(c.req.header(ACCESS_HEADER))
  if (!verdict.ok) return verdict.reason === 'unavailable' ? 'unavailable' : 'ends'
  const { email, role } = verdict.identity
  return email === session.tokenName && role === session.role ? 'holds' : 'ends'
}

async function startSession(
  db: Database,
  c: Context<ConsoleEnv>,
  who: SignedIn,
  seconds: number,
): Promise<Session> {
  const { id, session } = await openSession(db, who, seconds)
  const result = who.signedInWith === 'access' ? `ok: Cloudflare Access, ${who.role}` : 'ok'
  await audit(db, { actor: who.name, action: 'sign_in', target: 'console', result })
  setSessionCookie(c, id, seconds)
  return session
}

async function tooMany(c: Context<ConsoleEnv>, retryAfter: number): Promise<Response> {
  c.header('retry-after', String(retryAfter))
  return c.html(<LoginPage error="Too many refused sign-ins: try again later." />, 429)
}

async function keysUnavailable(c: Context<ConsoleEnv>): Promise<Response> {
  const error = "Cloudflare Access's keys could not be fetched: try again shortly."
  return c.html(<LoginPage error={error} access />, 503)
}

/**
 * The request comes from a page of this site: the browser's Sec-Fetch-Site says so, or its Origin
 * names this host. A client that sends neither (curl, a script) is not a browser being tricked.
 */
function sameSite(c: Context<ConsoleEnv>): boolean {
  const site = c.req.header('sec-fetch-site')
  if (site) return site === 'same-origin' || site === 'none'
  const origin = c.req.header('origin')
  if (!origin) return true
  try {
    return new URL(origin).host === (c.req.header('host') ?? new URL(c.req.url).host)
  } catch {
    return false
  }
}

/**
 * A urlencoded form, bounded; read once per request (the CSRF check and the route share it).
 * Null: the body is past {@link MAX_FORM_BYTES} (read no further).
 */
async function readForm(c: Context<ConsoleEnv>): Promise<Record<string, string> | null> {
  const known = c.get('form')
  if (known) return known
  if (!(c.req.header('content-type') ?? '').startsWith('application/x-www-form-urlencoded')) {
    return {}
  }
  let text: string
  try {
    text = (await readBoundedBody(c.req.raw, MAX_FORM_BYTES)).text
  } catch (err) {
    if (err instanceof BodyOverLimitError) return null
    throw err
  }
  const form = Object.fromEntries(new URLSearchParams(text))
  c.set('form', form)
  return form
}
