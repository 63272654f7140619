/**
 * Postgres through `@neondatabase/serverless` (a `pg`-compatible Pool over WebSockets), with every
 * wait bounded: opening or waiting for a connection (`connectionTimeoutMillis`), each statement on
 * the server (`SET LOCAL statement_timeout`) and on the client (`query_timeout`, a little longer so
 * the server's cancel normally wins and the connection stays usable).
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
import { DatabaseUnavailableError, describeError, InvalidEventError } from './errors'
import type { Logger } from './log'

// Node 20 has no global WebSocket; the driver needs a constructor. Harmless against real Neon.
neonConfig.webSocketConstructor = ws

export interface DatabaseOptions {
  databaseUrl: string
  /** `host:port/v2` of the local proxy; undefined against real Neon (driver defaults). */
  neonWsProxy?: string | undefined
  poolMax: number
  connectTimeoutMs: number
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

export function createDatabase(options: DatabaseOptions): Database {
  const { logger, queryTimeoutMs } = options
  const pool = new Pool({
    connectionString: options.databaseUrl,
    max: options.poolMax,
    connectionTimeoutMillis: options.connectTimeoutMs,
    // Client-side bound: also covers a connection that hangs without the server noticing.
    query_timeout: queryTimeoutMs + 1000,
    idleTimeoutMillis: 30_000,
  })
  if (options.neonWsProxy) pool.Client = localProxyClient(options.neonWsProxy)
  // An idle client whose connection drops emits 'error' on the pool; unhandled, it kills the process.
  pool.on('error', (err: unknown) => logger.warn('database idle client error', describeError(err)))

  const begin = `BEGIN; SET LOCAL statement_timeout = ${Math.floor(queryTimeoutMs)}`

  async function query<R>(text: string, values?: unknown[]): Promise<R[]> {
    try {
      return (await pool.query(text, values)).rows as R[]
    } catch (err) {
      throw toDatabaseError(err)
    }
  }

  async function attempt<T>(work: (tx: Queryable) => Promise<T>): Promise<T> {
    let client: PoolClient
    try {
      client = await pool.connect()
    } catch (err) {
      throw toDatabaseError(err)
    }
    // A client whose connection failed must not go back to the pool.
    let discard = false
    const tx: Queryable = {
      async query<R>(text: string, values?: unknown[]) {
        try {
          return (await client.query(text, values)).rows as R[]
        } catch (err) {
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
      client.release(discard)
    }
  }

  let closing: Promise<void> | undefined
  return {
    query,
    async transaction(work) {
      try {
        return await attempt(work)
      } catch (err) {
        // Errors of `work` itself (not the driver's) pass through untouched.
        if (!RETRY_ONCE.has(sqlState(err) ?? '')) throw err
        logger.warn('transaction retried', { code: sqlState(err) })
      }
      try {
        return await attempt(work)
      } catch (err) {
        throw RETRY_ONCE.has(sqlState(err) ?? '') ? toDatabaseError(err) : err
      }
    },
    async ping() {
      await query('SELECT 1')
    },
    close() {
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
    },
  }
}
