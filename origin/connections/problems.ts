/**
 * The admin API's RFC 9457 problems: the registry's codes (errors.ts) and the few of the
 * operator's routes (a token missing, too many refused, a body too large, a database away), each
 * with a stable `type` in the project's `tag:` scheme (contract/problem.ts). A refused field is
 * named in the `field` member; `detail` names fields and rules, never a value.
 * @module
 */
import { PROBLEM_CONTENT_TYPE } from '../../contract/problem'
import { CONNECTION_ERRORS, type ConnectionError } from './errors'

export const ADMIN_PROBLEMS = {
  connection_invalid: 'A field of the connection is missing, malformed or too large',
  connection_not_found: 'No such connection',
  connection_exists: 'A connection of this channel and account exists',
  connection_id_taken: 'An id belongs to another connection of this channel',
  registry_disabled: 'The connection registry is off',
  unauthorized: 'Operator token required',
  not_found: 'No such route',
  body_too_large: 'The request body is too large',
  too_many_requests: 'Too many refused credentials, retry later',
  unavailable: 'Temporarily unavailable, retry later',
} as const

export type AdminProblemCode = keyof typeof ADMIN_PROBLEMS

const STATUS: Record<AdminProblemCode, number> = {
  ...CONNECTION_ERRORS,
  unauthorized: 401,
  not_found: 404,
  body_too_large: 413,
  too_many_requests: 429,
  unavailable: 503,
}

/** The same form as contract/problem.ts `problemType`. */
export const adminProblemType = (code: AdminProblemCode): string =>
  `tag:inbound-dedup,2026:problem:${code.replaceAll('_', '-')}`

export interface AdminProblem {
  type: string
  title: string
  status: number
  code: AdminProblemCode
  detail?: string
  /** The input field refused (`account`, `ids.3`, `secrets.signing_secret`). */
  field?: string
}

export function adminProblem(
  code: AdminProblemCode,
  extra: { detail?: string; field?: string } = {},
  headers: Record<string, string> = {},
): Response {
  const body: AdminProblem = {
    type: adminProblemType(code),
    title: ADMIN_PROBLEMS[code],
    status: STATUS[code],
    code,
    ...(extra.detail ? { detail: extra.detail } : {}),
    ...(extra.field ? { field: extra.field } : {}),
  }
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...headers },
  })
}

export const errorProblem = (err: ConnectionError): Response =>
  adminProblem(err.code, { detail: err.message, ...(err.field ? { field: err.field } : {}) })
