/**
 * Postgres through either driver (driver.ts: `@neondatabase/serverless` over WebSockets, or
 * node-postgres over TCP; DATABASE_DRIVER, else by the URL), with every
 * wait bounded: opening or waiting for a connection (`connectionTimeoutMillis`), each statement on
 * the server (`statement_timeout`: a session default set on every new connection, and `SET LOCAL`
 * in each transaction) and on the client (`query_timeout`, a little longer so the server's cancel
 * normally wins and the connection stays usable).
 *
 * A caller's `AbortSignal` (the HTTP client hung up) stops the work: nothing starts after it, a wait
 * for a connection gives up, and a transaction or single statement in progress loses its
 * connection (Postgres rolls it back).
 *
 * The pieces: driver.ts (the two drivers behind one interface), pool.ts (the pool, its per-connection settings, the checkout), transaction.ts (one
 * transaction and its one retry), errors.ts (driver and SQL failures → the origin's errors).
 * Driver failures come out as {@link DatabaseUnavailableError} (503, retryable).
 * @module
 */
import type { DatabaseSettings } from '../config'
import type { DatabaseUnavailableError } from '../errors'
import type { Logger } from '../log'
import { driverForUrl } from './driver'
import { sqlState, toDatabaseError } from './errors'
import {
  checkoutFrom,
  connectionSetup,
  createPool,
  lease,
  type PoolOptions,
  throwIfGone,
} from './pool'
import { type Queryable, type StatementOptions, transactions, type Work } from './transaction'

export { type DatabaseDriver, driverForUrl } from './driver'
export type { Queryable, StatementOptions } from './transaction'

export type DatabaseOptions = PoolOptions

export interface Database extends Queryable {
  /**
   * Runs `work` in one transaction (READ COMMITTED). Commits if it resolves, rolls back if it
   * throws, and runs it once more on a serialization failure or deadlock (40001, 40P01).
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>
  /** `SELECT 1`; throws {@link DatabaseUnavailableError} when Postgres does not answer in time. */
  ping(): Promise<void>
  /**
   * The same database for one request: once `signal` aborts, its queries and transactions throw
   * {@link ClientGoneError} instead of starting, stop waiting for a connection, and a transaction
   * in progress is rolled back.
   */
  withSignal(signal: AbortSignal): Database
  /** Waits for checked-out connections, then closes the pool. Idempotent. */
  close(): Promise<void>
}

const CLOSE_TIMEOUT_MS = 5000

/**
 * A pool of `poolMax` connections on the origin's database settings: the HTTP origin's, the
 * relay's, the Gmail poller's and the failures CLI's pools all open here.
 */
export function openDatabase(
  settings: DatabaseSettings,
  poolMax: number,
  logger: Logger,
): Database {
  return createDatabase({
    driver: settings.databaseDriver,
    databaseUrl: settings.databaseUrl,
    neonWsProxy: settings.neonWsProxy,
    poolMax,
    connectTimeoutMs: settings.dbConnectTimeoutMs,
    queryTimeoutMs: settings.dbQueryTimeoutMs,
    logger,
  })
}

export function createDatabase(options: DatabaseOptions): Database {
  const { logger } = options
  const queryTimeoutMs = Math.floor(options.queryTimeoutMs)
  const driver = options.driver ?? driverForUrl(options.databaseUrl, options.neonWsProxy)
  const pool = createPool({ ...options, driver, queryTimeoutMs })
  const checkout = checkoutFrom(pool, connectionSetup(queryTimeoutMs, logger))
  const transaction = transactions(checkout, queryTimeoutMs, logger)

  async function query<R>(
    text: string,
    values: unknown[] | undefined,
    options: StatementOptions | undefined,
    signal: AbortSignal | undefined,
  ): Promise<R[]> {
    // The client hung up: the connection is cut, as a transaction's is. The statement (its own
    // implicit transaction, a new message's included) is rolled back unless it committed already.
    const leased = lease(await checkout(signal), signal)
    try {
      return (await leased.client.query({ text, values, name: options?.name })).rows as R[]
    } catch (err) {
      throwIfGone(signal)
      // A client whose connection failed (no SQLSTATE) must not go back to the pool.
      if (sqlState(err) === undefined) leased.discard()
      throw toDatabaseError(err)
    } finally {
      leased.release()
    }
  }

  let closing: Promise<void> | undefined
  const close = () => {
    closing ??= Promise.race([
      pool.end(),
      new Promise<void>((resolve) =>
        setTimeout(() => {
          logger.warn('database pool did not close in time', { timeoutMs: CLOSE_TIMEOUT_MS })
          resolve()
        }, CLOSE_TIMEOUT_MS).unref(),
      ),
    ])
    return closing
  }
  const ping = async () => {
    await query('SELECT 1', undefined, undefined, undefined)
  }

  const bound = (signal: AbortSignal | undefined): Database => ({
    query: <R>(text: string, values?: unknown[], options?: StatementOptions) =>
      query<R>(text, values, options, signal),
    transaction: <T>(work: Work<T>) => transaction(work, signal),
    ping,
    close,
    withSignal: (next) => bound(next),
  })
  return bound(undefined)
}
