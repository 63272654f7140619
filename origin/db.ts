/**
 * Postgres through `@neondatabase/serverless` (a `pg`-compatible Pool over WebSockets), with every
 * wait bounded: opening or waiting for a connection (`connectionTimeoutMillis`), each statement on
 * the server (`statement_timeout`: a session default set on every new connection, and `SET LOCAL`
 * in each transaction) and on the client (`query_timeout`, a little longer so the server's cancel
 * normally wins and the connection stays usable).
 *
 * Why `SET` after connecting rather than a startup parameter: Neon's proxy drops a
 * `statement_timeout` startup parameter silently, and its pooler (PgBouncer) refuses `options=-c
 * ...` outright ("unsupported startup parameter in options"). A plain `SET` works on Postgres and on
 * Neon's direct endpoint (PGlite, local only, accepts it but never cancels: it has no timers). On the pooled endpoint (`-pooler`, transaction mode) a
 * session `SET` does not follow our connection: there only the `SET LOCAL` of transactions holds,
 * and the role's default (`ALTER ROLE ... SET statement_timeout`) must bound the rest; the origin
 * warns at start-up.
 *
 * A connection that drops while checked out (a Neon compute suspend, a pooler restart, the local
 * proxy going away) makes its client emit 'error'; the pool only listens while a client is idle, so
 * every client gets a listener of its own for its whole life: unhandled, that event ends the process.
 * The statement in flight fails by itself, and the client is discarded.
 *
 * A caller's `AbortSignal` (the HTTP client hung up) stops the work: nothing starts after it, a wait
 * for a connection gives up, and a transaction in progress loses its connection (COMMIT is never
 * sent, so Postgres rolls it back; a COMMIT already sent may have landed: the Worker's retry then
 * finds the duplicate). A single statement already running is left to its statement_timeout.
 *
 * Driver failures come out as {@link DatabaseUnavailableError} (503, retryable). SQL errors with a
 * SQLSTATE outside the "unavailable" classes stay what they are (a bug: 500).
 * @module
 */
import {
  Client,
  type ClientConfig,
  neonConfig,
  Pool,
  type PoolClient,
} from '@neondatabase/serverless'
import ws from 'ws'
import {
  ClientGoneError,
  DatabaseUnavailableError,
  describeError,
  InvalidEventError,
} from './errors'
import type { Logger } from './log'

// Node 20 has no global WebSocket; the driver needs a constructor. Harmless against real Neon.
neonConfig.webSocketConstructor = ws

export interface DatabaseOptions {
  databaseUrl: string
  /** `host:port/v2` of the local proxy; undefined against real Neon (driver defaults). */
  neonWsProxy?: string | undefined
  poolMax: number
  /** Bound on waiting for a pooled connection, opening one included. */
  connectTimeoutMs: number
  /** Postgres cancels any statement after this (57014). */
  queryTimeoutMs: number
  logger: Logger
}

/** What a query needs; both the pool and a transaction's client provide it. */
export interface Queryable {
  query<R>(text: string, values?: unknown[]): Promise<R[]>
}

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

/** SQLSTATE classes that mean "not now" rather than "wrong SQL": connection, resources, shutdown. */
const UNAVAILABLE_CLASSES = new Set(['08', '28', '3D', '53', '57', '58'])
const RETRY_ONCE = new Set(['40001', '40P01'])
const CLOSE_TIMEOUT_MS = 5000

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/**
 * Anything the driver throws without a SQLSTATE (refused WebSocket, "Connection terminated",
 * "Query read timeout", pool wait timeout) is the database being out of reach.
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

/**
 * The local proxy settings go on each client rather than on the global `neonConfig`, so pools
 * aimed at different proxies (or at real Neon) can live in one process (tests start several).
 * They are the settings the team brief prescribes for NEON_WS_PROXY.
 */
function localProxyClient(wsProxy: string): typeof Client {
  return class LocalProxyClient extends Client {
    constructor(config?: string | ClientConfig) {
      super(config)
      const local = this.neonConfig
      local.webSocketConstructor = ws
      // The local proxy speaks plain ws://, no TLS.
      local.useSecureWebSocket = false
      // Pipelined startup is refused with trust auth ("invalid frontend message type 112").
      local.pipelineConnect = false
      local.wsProxy = (host, port) => `${wsProxy}?address=${host}:${port}`
    }
  }
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

function throwIfGone(signal: AbortSignal | undefined): void {
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

export function createDatabase(options: DatabaseOptions): Database {
  const { logger } = options
  const queryTimeoutMs = Math.floor(options.queryTimeoutMs)
  const pool = new Pool({
    connectionString: options.databaseUrl,
    max: options.poolMax,
    connectionTimeoutMillis: options.connectTimeoutMs,
    // Client-side bound: also covers a connection that hangs without the server noticing.
    query_timeout: queryTimeoutMs + 1000,
    idleTimeoutMillis: 30_000,
  })
  if (options.neonWsProxy) pool.Client = localProxyClient(options.neonWsProxy)
  if (isNeonPooler(options.databaseUrl)) {
    logger.warn('database: pooled Neon endpoint, session settings do not stick', {
      hint: 'statements outside transactions are bounded only by the role default: ALTER ROLE <role> SET statement_timeout = <DB_QUERY_TIMEOUT_MS>',
    })
  }
  // The pool emits 'connect' before it hands a new client out, so these run before its first use.
  pool.on('connect', (client: PoolClient) => {
    client.on('error', (err: unknown) =>
      logger.warn('database connection lost', describeError(err)),
    )
    client
      .query(`SET statement_timeout = ${queryTimeoutMs}`)
      .catch((err: unknown) =>
        logger.warn('database: SET statement_timeout failed', describeError(err)),
      )
    // Not every server has it (PGlite refuses it): best effort, and a separate statement so that
    // its failure cannot undo the timeout above.
    client
      .query(`SET client_connection_check_interval = ${CLIENT_CHECK_INTERVAL_MS}`)
      .catch((err: unknown) =>
        logger.debug('database: client_connection_check_interval not set', describeError(err)),
      )
  })
  // Idle clients' errors also reach the pool (which then discards them); logged above already.
  pool.on('error', () => {})

  const begin = `BEGIN; SET LOCAL statement_timeout = ${queryTimeoutMs}`

  /** A pooled client; gives up with {@link ClientGoneError} once `signal` aborts. */
  async function checkout(signal: AbortSignal | undefined): Promise<PoolClient> {
    throwIfGone(signal)
    const pending = pool.connect()
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

  async function query<R>(
    text: string,
    values: unknown[] | undefined,
    signal: AbortSignal | undefined,
  ): Promise<R[]> {
    const client = await checkout(signal)
    // A client whose connection failed (no SQLSTATE) must not go back to the pool.
    let discard = false
    try {
      return (await client.query(text, values)).rows as R[]
    } catch (err) {
      discard = sqlState(err) === undefined
      throw toDatabaseError(err)
    } finally {
      client.release(discard)
    }
  }

  async function attempt<T>(
    work: (tx: Queryable) => Promise<T>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
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
          const state = sqlState(err)
          if (state === undefined) discard = true
          // Left raw so that transaction() can recognise them and run the work again.
          if (state !== undefined && RETRY_ONCE.has(state)) throw err
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

  async function transaction<T>(
    work: (tx: Queryable) => Promise<T>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    try {
      return await attempt(work, signal)
    } catch (err) {
      // Errors of `work` itself (not the driver's) pass through untouched.
      if (!RETRY_ONCE.has(sqlState(err) ?? '')) throw err
      logger.warn('transaction retried', { code: sqlState(err) })
    }
    try {
      return await attempt(work, signal)
    } catch (err) {
      throw RETRY_ONCE.has(sqlState(err) ?? '') ? toDatabaseError(err) : err
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
    await query('SELECT 1', undefined, undefined)
  }

  const bound = (signal: AbortSignal | undefined): Database => ({
    query: <R>(text: string, values?: unknown[]) => query<R>(text, values, signal),
    transaction: <T>(work: (tx: Queryable) => Promise<T>) => transaction(work, signal),
    ping,
    close,
    withSignal: (next) => bound(next),
  })
  return bound(undefined)
}
