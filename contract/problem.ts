/**
 * RFC 9457 problem details (`application/problem+json`) of the public API and of the
 * Idempotency-Key middleware, on both wings. Each problem has a stable `type` (a `tag:` URI: it
 * names, it does not resolve; docs/api.md lists them), a fixed `title`, its status, and a `code`
 * extension for clients that switch on a word. `detail` is fixed per use, never built from the
 * request or from a secret.
 * @module
 */

export const PROBLEM_CONTENT_TYPE = 'application/problem+json'

export const PROBLEMS = {
  invalid_request: { status: 400, title: 'The request body is not a valid message' },
  idempotency_key_missing: { status: 400, title: 'Idempotency-Key is required' },
  idempotency_key_malformed: { status: 400, title: 'Idempotency-Key is malformed' },
  unauthorized: { status: 401, title: 'Missing or unknown API key' },
  origin_not_allowed: { status: 403, title: 'This Origin may not call the API for this tenant' },
  not_found: { status: 404, title: 'No such route' },
  idempotency_key_in_use: { status: 409, title: 'A request with this Idempotency-Key is running' },
  body_too_large: { status: 413, title: 'The request body is too large' },
  idempotency_key_reused: {
    status: 422,
    title: 'This Idempotency-Key was used for another request',
  },
  too_many_requests: { status: 429, title: 'Too many refused credentials, retry later' },
  internal_error: { status: 500, title: 'Internal error' },
  unavailable: { status: 503, title: 'Temporarily unavailable, retry later' },
} as const

export type ProblemCode = keyof typeof PROBLEMS

export interface Problem {
  type: string
  title: string
  status: number
  detail?: string
  code: ProblemCode
}

export const problemType = (code: ProblemCode): string =>
  `tag:inbound-dedup,2026:problem:${code.replaceAll('_', '-')}`

export function problemBody(code: ProblemCode, detail?: string): Problem {
  const { status, title } = PROBLEMS[code]
  return { type: problemType(code), title, status, ...(detail ? { detail } : {}), code }
}

export function problemResponse(
  code: ProblemCode,
  detail?: string,
  headers: Record<string, string> = {},
): Response {
  const body = problemBody(code, detail)
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...headers },
  })
}
