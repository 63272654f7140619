/**
 * Typed errors of the gateway. Each has a stable snake_case `code` and the HTTP status it maps to;
 * `app.onError` (worker/index.ts) is the one place that turns them into responses. What a caller
 * sees is the code and a fixed message; the `detail` (which rule failed, which variable is
 * missing) goes to the log only, never into a response.
 * @module
 */

export type GatewayErrorCode =
  | 'unauthorized'
  | 'forbidden'
  | 'body_too_large'
  | 'invalid_payload'
  | 'channel_not_configured'
  | 'vendor_keys_unavailable'
  | 'retry_later'
  | 'not_found'
  | 'internal_error'

/** Base class: a failure the gateway expected and knows how to answer. */
export class GatewayError extends Error {
  constructor(
    readonly code: GatewayErrorCode,
    readonly status: 400 | 401 | 403 | 404 | 413 | 500 | 503,
    /** Safe to show the caller: fixed per class, never built from request data or secrets. */
    readonly publicMessage: string,
    /** For the log only. */
    readonly detail: string,
    options?: ErrorOptions & { retryAfterSeconds?: number },
  ) {
    super(`${code}: ${detail}`, options)
    this.name = new.target.name
    this.retryAfterSeconds = options?.retryAfterSeconds
  }

  /** A 503's `Retry-After`: when a retry may find the cause gone. */
  readonly retryAfterSeconds: number | undefined
}

/** A vendor signature or secret did not verify. The reason is logged; the caller gets a bare 401. */
export class UnauthorizedError extends GatewayError {
  constructor(reason: string) {
    super('unauthorized', 401, 'unauthorized', reason)
  }
}

/** A handshake that did not prove itself (a wrong verify token): refused, nothing done. */
export class ForbiddenError extends GatewayError {
  constructor(reason: string) {
    super('forbidden', 403, 'forbidden', reason)
  }
}

export class BodyTooLargeError extends GatewayError {
  constructor(limitBytes: number, seenBytes: number) {
    super(
      'body_too_large',
      413,
      'request body too large',
      `body of at least ${seenBytes} bytes exceeds ${limitBytes}`,
    )
  }
}

/** The body verified but is not the JSON / form the vendor documents. Nothing was claimed. */
export class InvalidPayloadError extends GatewayError {
  constructor(detail: string, options?: ErrorOptions) {
    super('invalid_payload', 400, 'invalid payload', detail, options)
  }
}

/** A route whose secrets or settings are missing. Names the variables (never their values). */
export class ChannelNotConfiguredError extends GatewayError {
  constructor(
    readonly channel: string,
    readonly missing: readonly string[],
  ) {
    super(
      'channel_not_configured',
      503,
      `channel ${channel} is not configured`,
      `${channel}: set ${missing.join(', ')}`,
    )
  }
}

/**
 * The request cannot be judged now (the one-time claim of a plain WeChat signature, with Redis out
 * of reach): refused as the channels' retry answer is, and the vendor sends it again.
 */
export class RetryLaterError extends GatewayError {
  constructor(detail: string) {
    super('retry_later', 503, 'temporarily unavailable, retry', detail, { retryAfterSeconds: 1 })
  }
}
