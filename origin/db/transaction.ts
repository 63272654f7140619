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
import { type Checkout, lease, throwIfGone } from './pool'

/**
 * A statement prepared under `name` on each connection that runs it: parsed and planned once per
 * connection, then only bound and executed. One name = one text, always.
 */
export interface StatementOptions {
  name?: string
}

/** What a query needs; both the pool and a transaction's client provide it. */
export interface Queryable {
  query<R>(text: string, values?: unknown[], options?: StatementOptions): Promise<R[]>
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
    // The client hung up: COMMIT is never sent, so Postgres rolls back.
    const leased = lease(await checkout(signal), signal)
    const tx: Queryable = {
      async query<R>(text: string, values?: unknown[], options?: StatementOptions) {
        throwIfGone(signal)
        try {
          return (await leased.client.query({ text, values, name: options?.name })).rows as R[]
        } catch (err) {
          throwIfGone(signal)
          if (sqlState(err) === undefined) leased.discard()
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
      if (!leased.discarded) await tx.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      leased.release()
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
