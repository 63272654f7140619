/**
 * The origin's typed errors. Each carries a stable snake_case `code` and the HTTP status it maps to;
 * `app.onError` turns them into responses in one place. Messages are safe to show to the caller:
 * they never contain secrets, bodies or driver details (those go to `cause`, which is only logged).
 * @module
 */

export type OriginErrorCode =
  | 'unauthorized'
  | 'invalid_event'
  | 'body_too_large'
  | 'signature_reused'
  | 'connection_disabled'
  | 'not_found'
  | 'database_unavailable'
  | 'client_gone'
  | 'internal_error'

export class OriginError extends Error {
  constructor(
    readonly code: OriginErrorCode,
    readonly status: 400 | 401 | 404 | 413 | 422 | 500 | 503,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
    this.name = new.target.name
  }
}

/** An error whose code, status and message are always the same (a cause may be attached). */
function fixedError(code: OriginErrorCode, status: OriginError['status'], message: string) {
  return class extends OriginError {
    constructor(options?: ErrorOptions) {
      super(code, status, message, options)
    }
  }
}

/** Opaque on purpose: which rule failed (missing, stale, wrong) is logged, never returned. */
export class UnauthorizedError extends fixedError(
  'unauthorized',
  401,
  'missing or invalid request signature',
) {}

export class InvalidEventError extends OriginError {
  constructor(message: string) {
    super('invalid_event', 400, message)
  }
}

/**
 * An event whose one-time signature (contract/signature-binding.ts) is bound to another body: a
 * reused signed URL, or the second of two bodies both taken while no store could bind. Permanent.
 */
export class SignatureReusedError extends OriginError {
  constructor() {
    super('signature_reused', 422, 'the signature of this event is bound to another body')
  }
}

/**
 * An event verified with a registry connection that is disabled or deleted here (the edge may
 * hold the old record for its propagation bound): permanent, the Worker dead-letters it.
 */
export class ConnectionDisabledError extends OriginError {
  constructor() {
    super('connection_disabled', 422, 'the connection of this event is disabled or deleted')
  }
}

export class BodyTooLargeError extends OriginError {
  constructor(maxBytes: number) {
    super('body_too_large', 413, `event body exceeds ${maxBytes} bytes`)
  }
}

export class NotFoundError extends fixedError('not_found', 404, 'no such route') {}

/**
 * Postgres could not be reached or did not answer in time. Retryable: the worker keeps the event
 * and tries again, so the caller gets 503, not 500.
 */
export class DatabaseUnavailableError extends fixedError(
  'database_unavailable',
  503,
  'database unavailable, retry later',
) {}

/**
 * The HTTP client hung up before the answer (the Worker's forward timed out): the request's work
 * stopped, its transaction, if any, was rolled back. Nobody reads the answer (it is for the log and
 * the counters); it is a 503 because "try again" is what it means. The Worker retries, and finds a
 * duplicate if the work had committed after all.
 */
export class ClientGoneError extends fixedError(
  'client_gone',
  503,
  'the client closed the request',
) {}

export class InternalError extends fixedError('internal_error', 500, 'internal error') {}

/** A loggable description of any thrown value (the one both wings use). */
export { describeError } from '../shared/describe-error'
