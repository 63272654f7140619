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
  | 'not_found'
  | 'database_unavailable'
  | 'client_gone'
  | 'internal_error'

export class OriginError extends Error {
  constructor(
    readonly code: OriginErrorCode,
    readonly status: 400 | 401 | 404 | 413 | 500 | 503,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options)
    this.name = new.target.name
  }
}

/** Opaque on purpose: which rule failed (missing, stale, wrong) is logged, never returned. */
export class UnauthorizedError extends OriginError {
  constructor() {
    super('unauthorized', 401, 'missing or invalid request signature')
  }
}

export class InvalidEventError extends OriginError {
  constructor(message: string) {
    super('invalid_event', 400, message)
  }
}

export class BodyTooLargeError extends OriginError {
  constructor(maxBytes: number) {
    super('body_too_large', 413, `event body exceeds ${maxBytes} bytes`)
  }
}

export class NotFoundError extends OriginError {
  constructor() {
    super('not_found', 404, 'no such route')
  }
}

/**
 * Postgres could not be reached or did not answer in time. Retryable: the worker keeps the event
 * and tries again, so the caller gets 503, not 500.
 */
export class DatabaseUnavailableError extends OriginError {
  constructor(options?: ErrorOptions) {
    super('database_unavailable', 503, 'database unavailable, retry later', options)
  }
}

/**
 * The HTTP client hung up before the answer (the Worker's forward timed out): the request's work
 * stopped, its transaction, if any, was rolled back. Nobody reads the answer (it is for the log and
 * the counters); it is a 503 because "try again" is what it means. The Worker retries, and finds a
 * duplicate if the work had committed after all.
 */
export class ClientGoneError extends OriginError {
  constructor() {
    super('client_gone', 503, 'the client closed the request')
  }
}

export class InternalError extends OriginError {
  constructor(options?: ErrorOptions) {
    super('internal_error', 500, 'internal error', options)
  }
}

/** A loggable description of any thrown value (the one both wings use). */
export { describeError } from '../contract/describe-error'
