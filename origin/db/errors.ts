/**
 * How a driver or SQL failure reaches the rest of the origin: out of reach or "not now" →
 * {@link DatabaseUnavailableError} (503, retryable); a value the database refuses →
 * {@link InvalidEventError} (permanent); any other SQLSTATE stays what it is (a bug: 500).
 * @module
 */
import { DatabaseUnavailableError, InvalidEventError } from '../errors'

/** SQLSTATE classes that mean "not now" rather than "wrong SQL": connection, resources, shutdown. */
const UNAVAILABLE_CLASSES = new Set(['08', '28', '3D', '53', '57', '58'])
/** Serialization failure and deadlock: the transaction runs once more. */
const RETRY_ONCE = new Set(['40001', '40P01'])

/**
 * A SQLSTATE: its class is a digit and a digit or letter (23, 3D, 0A), or F0, HV, P0, XX; then three
 * more. Narrower than "five characters" because node-postgres passes Node's socket errors through,
 * and `EPIPE` would pass for one.
 */
const SQLSTATE = /^(?:[0-9][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/

export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && SQLSTATE.test(code) ? code : undefined
}

/** A serialization failure or deadlock (40001, 40P01): worth running the transaction again. */
export function isRetryOnce(err: unknown): boolean {
  return RETRY_ONCE.has(sqlState(err) ?? '')
}

/**
 * Anything the driver throws without a SQLSTATE (refused WebSocket or TCP connection, EPIPE,
 * "Connection terminated", "Query read timeout", pool wait timeout) is the database being out of reach.
 */
export function toDatabaseError(err: unknown): unknown {
  const state = sqlState(err)
  if (state === undefined || UNAVAILABLE_CLASSES.has(state.slice(0, 2)) || RETRY_ONCE.has(state)) {
    return new DatabaseUnavailableError({ cause: err })
  }
  // Class 22 (data exception: a value out of range, bad encoding) fails the same way every time:
  // answering 500 would have the worker retry (and the spool hold) an event that can never land.
  if (state.startsWith('22')) {
    return new InvalidEventError(`invalid event: a value was rejected by the database (${state})`)
  }
  return err
}
