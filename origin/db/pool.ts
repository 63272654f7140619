/**
 * The connection pool under {@link createDatabase}: a `pg`-compatible Pool of either driver
 * (driver.ts: Neon over WebSockets, node-postgres over TCP), each new connection bounded on the server (`statement_timeout`) before
 * its first use, and a checkout that gives up when the caller's `AbortSignal` does.
 *
 * Why `SET` after connecting rather than a startup parameter: Neon's proxy drops a
 * `statement_timeout` startup parameter silently, and its pooler (PgBouncer) refuses `options=-c
 * ...` outright ("unsupported startup parameter in options"). A plain `SET` works on Postgres and
 * on Neon's direct endpoint (PGlite, local only, accepts it but never cancels: it has no timers).
 * On the pooled endpoint (`-pooler`, transaction mode) a session `SET` does not follow our
 * connection: there only the `SET LOCAL` of transactions holds, and the role's default (`ALTER
 * ROLE ... SET statement_timeout`) must bound the rest; the origin warns at start-up.
 *
 * A connection that drops while checked out (a Neon compute suspend, a pooler restart, the local
 * proxy going away) makes its client emit 'error'; the pool only listens while a client is idle,
 * so every client gets a listener of its own for its whole life: unhandled, that event ends the
 * process. The statement in flight fails by itself, and the client is discarded.
 * @module
 */
import { ClientGoneError, describeError } from '../errors'
import type { Logger } from '../log'
import { type DatabaseDriver, type DriverClient, type DriverPool, openDriverPool } from './driver'
import { toDatabaseError } from './errors'

export type PoolClient = DriverClient

export interface PoolOptions {
  /** @default by the URL (driver.ts driverForUrl) */
  driver?: DatabaseDriver | undefined
  databaseUrl: string
  /** `host:port/v2` of the local proxy; undefined against real Neon (driver defaults). */
  neonWsProxy?: string | undefined
  poolMax: number
  /** Bound on waiting for a pooled connection, opening one included. */
  connectTimeoutMs: number
  /** Postgres cancels any statement after this (57014); whole milliseconds. */
  queryTimeoutMs: number
  logger: Logger
}

/**
 * How often Postgres checks, while a statement runs (a lock wait included), that the client is
 * still there. A connection we cut (a request whose client hung up) then ends on the server within
 * this, releasing its locks, instead of waiting out its statement_timeout.
 */
const CLIENT_CHECK_INTERVAL_MS = 1000

/** Neon's pooled endpoints carry `-pooler` in the host name (PgBouncer, transaction mode). */
function isNeonPooler(databaseUrl: string): boolean {
  try {
    return new URL(databaseUrl).hostname.includes('-pooler.')
  } catch {
    return false
  }
}

export function throwIfGone(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ClientGoneError()
}

/** A promise that rejects with {@link ClientGoneError} once `signal` aborts; dispose when done. */
function untilAborted(signal: AbortSignal) {
  let onAbort = () => {}
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(new ClientGoneError())
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
  })
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) }
}

export function createPool(options: PoolOptions & { driver: DatabaseDriver }): DriverPool {
  const { logger, queryTimeoutMs } = options
  const pool = openDriverPool({
    driver: options.driver,
    databaseUrl: options.databaseUrl,
    neonWsProxy: options.neonWsProxy,
    max: options.poolMax,
    connectionTimeoutMillis: options.connectTimeoutMs,
    // Client-side bound: also covers a connection that hangs without the server noticing.
    query_timeout: queryTimeoutMs + 1000,
    idleTimeoutMillis: 30_000,
  })
  if (options.driver === 'neon' && isNeonPooler(options.databaseUrl)) {
    logger.warn('database: pooled Neon endpoint, session settings do not stick', {
      hint: 'statements outside transactions are bounded only by the role default: ALTER ROLE <role> SET statement_timeout = <DB_QUERY_TIMEOUT_MS>',
    })
  }
  pool.on('connect', (client: PoolClient) => {
    client.on('error', (err: unknown) =>
      logger.warn('database connection lost', describeError(err)),
    )
  })
  // Idle clients' errors also reach the pool (which then discards them); logged above already.
  pool.on('error', () => {})
  return pool
}

/**
 * The session settings of a new connection, applied once, before its first use, one statement
 * after the other: node-postgres deprecates queueing a query while another runs.
 */
export function connectionSetup(
  queryTimeoutMs: number,
  logger: Logger,
): (client: PoolClient) => Promise<void> {
  const done = new WeakMap<PoolClient, Promise<void>>()
  const setUp = async (client: PoolClient) => {
    await client
      .query(`SET statement_timeout = ${queryTimeoutMs}`)
      .catch((err: unknown) =>
        logger.warn('database: SET statement_timeout failed', describeError(err)),
      )
    // Not every server has it (PGlite refuses it): best effort, and a separate statement so that
    // its failure cannot undo the timeout above.
    await client
      .query(`SET client_connection_check_interval = ${CLIENT_CHECK_INTERVAL_MS}`)
      .catch((err: unknown) =>
        logger.debug('database: client_connection_check_interval not set', describeError(err)),
      )
  }
  return (client) => {
    let setting = done.get(client)
    if (!setting) {
      setting = setUp(client)
      done.set(client, setting)
    }
    return setting
  }
}

export type Checkout = (signal: AbortSignal | undefined) => Promise<PoolClient>

/** A checked-out client for one piece of work (a statement, a transaction). */
export interface Lease {
  client: PoolClient
  /** The connection is not fit for reuse (it failed without a SQLSTATE, or was cut). */
  discard(): void
  readonly discarded: boolean
  /** Back to the pool (or closed, when discarded); once, however often called. */
  release(): void
}

/**
 * Leases `client` for work that `signal` may cancel: when the caller hangs up, the connection is
 * cut at once (Postgres rolls back what had not committed) and the pool slot is free now rather
 * than when the statement in flight ends.
 */
export function lease(client: PoolClient, signal: AbortSignal | undefined): Lease {
  let discarded = false
  let released = false
  const giveBack = () => {
    if (released) return
    released = true
    client.release(discarded)
  }
  const onAbort = () => {
    discarded = true
    giveBack()
  }
  signal?.addEventListener('abort', onAbort, { once: true })
  return {
    client,
    discard: () => {
      discarded = true
    },
    get discarded() {
      return discarded
    },
    release: () => {
      signal?.removeEventListener('abort', onAbort)
      giveBack()
    },
  }
}

/** A pooled client; gives up with {@link ClientGoneError} once `signal` aborts. */
export function checkoutFrom(
  pool: DriverPool,
  setUp: (client: PoolClient) => Promise<void>,
): Checkout {
  return async (signal) => {
    throwIfGone(signal)
    const pending = pool.connect().then(async (client) => {
      await setUp(client)
      return client
    })
    const gone = signal ? untilAborted(signal) : undefined
    try {
      return await (gone ? Promise.race([pending, gone.promise]) : pending)
    } catch (err) {
      if (!(err instanceof ClientGoneError)) throw toDatabaseError(err)
      // The pool still owes us a client: hand it straight back when it comes.
      pending.then(
        (client) => client.release(),
        () => {},
      )
      throw err
    } finally {
      gone?.dispose()
    }
  }
}
