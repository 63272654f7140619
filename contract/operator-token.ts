/**
 * The operator's routes (the Worker's `GET /healthz/deep`, the origin's `GET /metrics`): open only
 * to `Authorization: Bearer {OPERATOR_TOKEN}`, compared in constant time. Without a token
 * configured the route does not exist (404): nothing is ever served to anyone by default.
 * @module
 */
import { timingSafeEqual } from './crypto'

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
