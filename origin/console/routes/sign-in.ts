/**
 * The console's sign-in and sign-out routes. `GET /login` and `POST /login` are the only answers
 * without a session (origin/console/sign-in.tsx), so the console mounts them before its session
 * gate; `POST /logout` comes after it, with the session and its CSRF token checked.
 * @module
 */
import { Hono } from 'hono'
import type { Database } from '../../db'
import { type ConsoleEnv, loginPage, type SignInDeps, signOut, tokenSignIn } from '../sign-in'

/** `GET /login` (the form, or Cloudflare Access's sign-in) and `POST /login` (a token). */
export function signInRoutes(deps: SignInDeps): Hono<ConsoleEnv> {
  return new Hono<ConsoleEnv>().get('/login', loginPage(deps)).post('/login', tokenSignIn(deps))
}

/** `POST /logout`: the session ends (behind the gate: a session and its CSRF token). */
export function signOutRoutes(db: Database): Hono<ConsoleEnv> {
  return new Hono<ConsoleEnv>().post('/logout', signOut(db))
}
