/**
 * One transaction on one pooled client (READ COMMITTED, `SET LOCAL statement_timeout`), run once
 * more on a serialization failure or deadlock.
 *
 * A caller's `AbortSignal` (the HTTP client hung up) cuts the transaction's connection: COMMIT is
 * never sent, so Postgres rolls it back, and the pool slot is free at once (a COMMIT already sent
 * may have landed: the Worker's retry then finds the duplicate).
 * @module
 */
import type { Logger } from '../log'
import { isRetryOnce, sqlState, toDatabaseError } from './errors'
import { type Checkout, throwIfGone } from './pool'

/** What a query needs; both the pool and a transaction's client provide it. */
export interface Queryable {
  query<R>(text: string, values?: unknown[]): Promise<R[]>
}

export type Work<T> = (tx: Queryable) => Promise<T>

export type RunTransaction = <T>(work: Work<T>, signal: AbortSignal | undefined) => Promise<T>

export function transactions(
  checkout: Checkout,
  queryTimeoutMs: number,
  logger: Logger,
): RunTransaction {
  const begin = `BEGIN; SET LOCAL statement_timeout = ${queryTimeoutMs}`

  async function attempt<T>(work: Work<T>, signal: AbortSignal | undefined): Promise<T> {
    const client = await checkout(signal)
    let discard = false
    let released = false
    const release = () => {
      if (released) return
      released = true
      client.release(discard)
    }
    // The client hung up: cut the connection. COMMIT is never sent, so Postgres rolls back, and
    // the pool slot is free now rather than when the statement in flight ends.
    const onAbort = () => {
      discard = true
      release()
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    const tx: Queryable = {
      async query<R>(text: string, values?: unknown[]) {
        throwIfGone(signal)
        try {
          return (await client.query(text, values)).rows as R[]
        } catch (err) {
          throwIfGone(signal)
          if (sqlState(err) === undefined) discard = true
          // Left raw so that the retry below can recognise them and run the work again.
          if (isRetryOnce(err)) throw err
          throw toDatabaseError(err)
        }
      },
    }
    try {
      await tx.query(begin)
      const result = await work(tx)
      await tx.query('COMMIT')
      return result
    } catch (err) {
      if (!discard) await tx.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      signal?.removeEventListener('abort', onAbort)
      release()
    }
  }

  return async <T>(work: Work<T>, signal: AbortSignal | undefined): Promise<T> => {
    try {
      return await attempt(work, signal)
    } catch (err) {
      // Errors of `work` itself (not the driver's) pass through untouched.
      if (!isRetryOnce(err)) throw err
      logger.warn('transaction retried', { code: sqlState(err) })
    }
    try {
      return await attempt(work, signal)
    } catch (err) {
      throw isRetryOnce(err) ? toDatabaseError(err) : err
    }
  }
}
