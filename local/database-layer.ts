/**
 * The database the origins reach: a real Postgres (the database named in the URL created when
 * missing, and migrated), or embedded PGlite, behind the Neon WebSocket proxy the origins' driver
 * talks to, which can also cut every connection (a Neon drop).
 * @module
 */
import { join } from 'node:path'
import pg from 'pg'
import { migrate } from '../ops/migrate'
import { type RunningProxy, startNeonWsProxy } from './neon-ws-proxy'
import { type EmbeddedPostgres, startEmbeddedPostgres } from './pglite'
import { once, type Stoppable } from './stoppable'
import { REPO_ROOT } from './wrangler-config'

export interface DatabaseLayerOptions {
  /**
   * A real Postgres. Unset: embedded PGlite in {@link DatabaseLayerOptions.pgliteDir}.
   * The database named in the URL is created when missing (see `createDatabase`).
   */
  databaseUrl?: string
  /** @default true: `CREATE DATABASE` when the URL's database does not exist. */
  createDatabase?: boolean
  /** Apply migrations/ with dbmate. @default true */
  migrate?: boolean
  /** Where PGlite keeps its files. @default '<repo>/.data/pglite' */
  pgliteDir?: string
  /** Port of the Neon WebSocket proxy. @default 0 */
  proxyPort?: number
  /** Port of PGlite's Postgres wire-protocol socket. @default 0 */
  pglitePort?: number
}

export interface DatabaseLayer extends Stoppable {
  mode: 'postgres' | 'pglite'
  /** Plain TCP connection string (dbmate, `pg`, the origin's `DATABASE_URL`). */
  databaseUrl: string
  /** `host:port/v2` of the Neon proxy: the origin's `NEON_WS_PROXY`. */
  neonWsProxy: string
  /**
   * The environment an origin needs for this database: DATABASE_URL, NEON_WS_PROXY, and on
   * PGlite a small DB_POOL_MAX (one shared backend: more connections only queue).
   */
  originEnv: Record<string, string>
  /** dbmate's output ('' when nothing was applied or migrations were skipped). */
  migrations: string
  /** The embedded server, when mode is 'pglite'. */
  pglite?: EmbeddedPostgres
  /** Fault hook: the Neon proxy cuts every open connection (see `dropConnections`). */
  dropConnections(): number
  /** Statements the origins sent through the Neon proxy so far, by label (the bench's cost). */
  statementCounts(): Record<string, number>
}

/** PGlite runs one statement at a time for everyone: a few connections are plenty. */
export const PGLITE_POOL_MAX = 4

export async function startDatabaseLayer(
  options: DatabaseLayerOptions = {},
): Promise<DatabaseLayer> {
  let pglite: EmbeddedPostgres | undefined
  let databaseUrl: string
  if (options.databaseUrl) {
    databaseUrl = options.databaseUrl
    if (options.createDatabase !== false) await ensureDatabase(databaseUrl)
  } else {
    pglite = await startEmbeddedPostgres({
      dataDir: options.pgliteDir ?? join(REPO_ROOT, '.data', 'pglite'),
      port: options.pglitePort ?? 0,
    })
    databaseUrl = pglite.url
  }
  let proxy: RunningProxy | undefined
  try {
    const migrations = options.migrate === false ? '' : await migrate(databaseUrl)
    const target = new URL(databaseUrl)
    proxy = await startNeonWsProxy({
      target: { host: target.hostname, port: Number(target.port || 5432) },
      port: options.proxyPort ?? 0,
    })
    const running = proxy
    const originEnv: Record<string, string> = {
      DATABASE_URL: databaseUrl,
      NEON_WS_PROXY: running.wsProxy,
    }
    if (pglite) originEnv.DB_POOL_MAX = String(PGLITE_POOL_MAX)
    return {
      mode: pglite ? 'pglite' : 'postgres',
      databaseUrl,
      neonWsProxy: running.wsProxy,
      originEnv,
      migrations,
      pglite,
      dropConnections: () => running.dropConnections(),
      statementCounts: () => running.statementCounts(),
      stop: once(async () => {
        await running.close()
        await pglite?.stop()
      }),
    }
  } catch (err) {
    await proxy?.close()
    await pglite?.stop()
    throw err
  }
}

/** Database names we create: letters, digits, underscore (no quoting surprises). */
const SAFE_DATABASE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/**
 * Creates the database named in `databaseUrl` when it does not exist, connecting to the same server's
 * `postgres` database. Returns true when it created one.
 */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl)
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''))
  if (!name || name === 'postgres') return false
  if (!SAFE_DATABASE_NAME.test(name)) {
    throw new Error(
      'the database name in DATABASE_URL may only hold letters, digits and _ (create it yourself otherwise)',
    )
  }
  url.pathname = '/postgres'
  const admin = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5_000 })
  await admin.connect()
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (found.rowCount) return false
    try {
      await admin.query(`CREATE DATABASE "${name}"`)
    } catch (err) {
      // Another process created it between our check and our CREATE: fine.
      if ((err as { code?: string }).code !== '42P04') throw err
    }
    return true
  } finally {
    await admin.end()
  }
}
