/**
 * The registry's typed errors: a stable code, its HTTP status, and (for bad input) the field it
 * is about. Messages are ours and name fields, never a value: a value refused may be a secret
 * pasted in the wrong place.
 * @module
 */

export const CONNECTION_ERRORS = {
  /** A field is missing, malformed or too large: `field` names it (`ids.3`, `secrets.token`). */
  connection_invalid: 400,
  connection_not_found: 404,
  /** Another connection is already this channel's account. */
  connection_exists: 409,
  /** An id (a page, a number, a key hash) another connection of the channel already holds. */
  connection_id_taken: 409,
  /** ORIGIN_KEKS is not set (or cannot open a stored secret): the registry cannot seal. */
  registry_disabled: 503,
} as const

export type ConnectionErrorCode = keyof typeof CONNECTION_ERRORS

export class ConnectionError extends Error {
  readonly status: (typeof CONNECTION_ERRORS)[ConnectionErrorCode]
  constructor(
    readonly code: ConnectionErrorCode,
    message: string,
    /** The input field the error is about (a dotted path), when it is about one. */
    readonly field?: string,
  ) {
    super(message)
    this.name = 'ConnectionError'
    this.status = CONNECTION_ERRORS[code]
  }
}

export const invalid = (field: string, message: string) =>
  new ConnectionError('connection_invalid', `${field}: ${message}`, field)

export const notFound = () => new ConnectionError('connection_not_found', 'no such connection')

export const REGISTRY_DISABLED_MESSAGE =
  'the connection registry is off: ORIGIN_KEKS is not set (generate one: docs/connections.md "Keys")'
