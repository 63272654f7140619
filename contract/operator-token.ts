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

export type OperatorAccess =
  | { ok: true }
  | { ok: false; status: 404; code: 'not_found'; message: 'not found' }
  | { ok: false; status: 401; code: 'unauthorized'; message: 'operator token required' }

export function operatorAccess(
  token: string | undefined,
  authorization: string | null | undefined,
): OperatorAccess {
  const configured = token?.trim()
  if (!configured) return { ok: false, status: 404, code: 'not_found', message: 'not found' }
  const offered = authorization?.replace(/^Bearer\s+/i, '') ?? ''
  if (!timingSafeEqual(offered, configured)) {
    return { ok: false, status: 401, code: 'unauthorized', message: 'operator token required' }
  }
  return { ok: true }
}
