/**
 * What a log line may say about a thrown value, in both wings: its name, message, SQLSTATE-style
 * code and cause; never a stack. Messages of the errors we throw carry no secrets or bodies;
 * driver and client errors (Redis, fetch, Postgres) carry none either.
 * @module
 */

/** A type, not an interface: it fits wherever a log takes a record of strings. */
export type ErrorDescription = {
  name: string
  message: string
  code?: string
  cause?: string
}

/** Bounds the message: an error from a far-away system may be long. */
const MAX_MESSAGE_CHARS = 300

export function describeError(err: unknown): ErrorDescription {
  if (err instanceof Error) {
    const out: ErrorDescription = {
      name: err.name,
      message: err.message.slice(0, MAX_MESSAGE_CHARS),
    }
    const code = (err as { code?: unknown }).code
    if (typeof code === 'string') out.code = code
    if (err.cause !== undefined) out.cause = describeError(err.cause).message
    return out
  }
  // The WebSocket layer rejects with ErrorEvent objects, which are not Errors.
  const message = (err as { message?: unknown } | null)?.message
  const text = typeof message === 'string' ? message : String(err)
  return { name: typeof err, message: text.slice(0, MAX_MESSAGE_CHARS) }
}

/** The same as one short line (`Name: message`), for a field of a JSON log line. */
export function errorLine(err: unknown): string {
  const { name, message } = describeError(err)
  return `${name}: ${message}`
}
