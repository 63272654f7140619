/**
 * The operator's token: one row in both wings' settings tables, and the check of the operator's
 * bearer routes (the Worker's `GET /healthz/deep`, the origin's `GET /metrics`): open only to
 * `Authorization: Bearer {OPERATOR_TOKEN}`, compared in constant time. Without a token configured
 * such a route does not exist (404): nothing is ever served to anyone by default. The origin's
 * console takes the same token as a sign-in token (role operator).
 * @module
 */
import { timingSafeEqual } from './crypto'
import { setting } from './settings'

export const OPERATOR_TOKEN = setting({
  name: 'OPERATOR_TOKEN',
  kind: 'string',
  secret: true,
  doc: 'the operator token: GET /healthz/deep (Worker), GET /metrics and console sign-in (origin); unset: none of them',
})

/**
 * Shorter operator tokens are refused: the token opens replays and every message body. The origin
 * will not start with one; the Worker, which has no start-up to fail, serves its operator route to
 * nobody (404), as if none were set.
 */
export const OPERATOR_TOKEN_MIN_CHARS = 16

/** Why `token` cannot be the operator token, or null when it can (unset included). */
export function operatorTokenProblem(token: string | undefined): string | null {
  const value = token?.trim()
  if (!value || value.length >= OPERATOR_TOKEN_MIN_CHARS) return null
  return `OPERATOR_TOKEN needs ${OPERATOR_TOKEN_MIN_CHARS} characters or more (e.g. openssl rand -hex 32)`
}

export type OperatorAccess =
  | { ok: true }
  | { ok: false; status: 404; code: 'not_found'; message: 'not found' }
  | { ok: false; status: 401; code: 'unauthorized'; message: 'operator token required' }

export function operatorAccess(
  token: string | undefined,
  authorization: string | null | undefined,
): OperatorAccess {
  const configured = token?.trim()
  if (!configured || operatorTokenProblem(configured)) {
    return { ok: false, status: 404, code: 'not_found', message: 'not found' }
  }
  const offered = authorization?.replace(/^Bearer\s+/i, '') ?? ''
  if (!timingSafeEqual(offered, configured)) {
    return { ok: false, status: 401, code: 'unauthorized', message: 'operator token required' }
  }
  return { ok: true }
}
