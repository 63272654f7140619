/**
 * The embedded database for `npm run dev` when `DATABASE_URL` is unset: PGlite (Postgres 18
 * compiled to WebAssembly) persisted in a directory, served over the Postgres wire protocol on a
 * loopback port (local/pglite-wire.ts), so dbmate and the Neon proxy reach it like any Postgres.
 *
 * Limits, all from PGlite being ONE backend that every connection shares:
 * - sessions take turns: a connection has the backend from its first message until the backend
 *   is idle again (after Sync/Query, outside a transaction). So an open transaction makes every
 *   other connection wait; a client that opens a transaction and then waits for a second
 *   connection waits until its hold times out (30 s) and is disconnected. Use a small pool
 *   (DB_POOL_MAX 4): more connections add no parallelism.
 * - session state leaks between connections (SET, temp tables, named prepared statements: 42P05).
 * - one database: the name in the URL is ignored; CREATE DATABASE is not supported.
 * - one process per data directory (enforced here with a lock file).
 * - memory: ~850 MB RSS after the first initdb, ~360 MB when reopening an existing directory.
 * It runs in the caller's process, so a long query also stalls whatever else that process serves.
 * @module
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { PGlite } from '@electric-sql/pglite'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import { isProcessAlive } from '../origin/process-alive'
import { type PgliteWireServer, servePgliteWire } from './pglite-wire'

export interface EmbeddedPostgresOptions {
  /** Where the database files live; created if missing. `npm run dev` uses `.data/pglite`. */
  dataDir: string
  /** @default 0 (any free port) */
  port?: number
  /** @default '127.0.0.1' */
  host?: string
  /** Connections beyond this are refused. @default 64 */
  maxConnections?: number
  /**
   * A connection holding the shared backend (in a transaction, or mid-batch) and silent this long
   * is disconnected and rolled back, so one stuck client cannot stall everyone. @default 30000
   */
  holdTimeoutMs?: number
  /**
   * A new directory starts as a copy of a freshly initialised one, kept in the system's temp
   * directory per PGlite version: initdb in WebAssembly costs ~6 s of CPU, a copy a fraction of a
   * second (tests make many databases on two cores). @default true
   */
  fromTemplate?: boolean
}

export interface EmbeddedPostgres {
  /** postgres://postgres@host:port/postgres: for dbmate, `pg`, and as the proxy's target. */
  url: string
  host: string
  port: number
  dataDir: string
  /** Open wire-protocol connections and statements waiting for the shared backend. */
  stats(): { activeConnections: number; queuedQueries: number; maxConnections: number }
  /** Closes every connection, stops listening, and closes the database cleanly. */
  stop(): Promise<void>
}

export class EmbeddedPostgresError extends Error {
  readonly code: 'data_dir_locked' | 'start_failed'
  constructor(code: EmbeddedPostgresError['code'], message: string, options?: ErrorOptions) {
    super(message, options)
    this.name = 'EmbeddedPostgresError'
    this.code = code
  }
}

/** Two processes on one PGlite directory corrupt it: take a pid lock, refuse while its owner lives. */
function lockDataDir(dataDir: string): () => void {
  const lockFile = join(dataDir, '.inbound-dedup.lock')
  try {
    const owner = Number(readFileSync(lockFile, 'utf8').trim())
    if (owner && isProcessAlive(owner)) {
      throw new EmbeddedPostgresError(
        'data_dir_locked',
        `${dataDir} is in use by process ${owner} (another \`npm run dev\`?). Stop it first.`,
      )
    }
  } catch (err) {
    if (err instanceof EmbeddedPostgresError) throw err
    // No lock file (or an unreadable one): nobody holds it.
  }
  writeFileSync(lockFile, `${process.pid}\n`)
  return () => rmSync(lockFile, { force: true })
}

/**
 * The path of an initialised, cleanly closed PGlite data directory for this PGlite version, made
 * on first use. Concurrent makers each build their own and the first rename wins.
 */
export async function preparePgliteTemplate(): Promise<string> {
  // Its package.json is not in its exports map: read the file.
  const manifest = join(
    fileURLToPath(import.meta.url),
    '..',
    '..',
    'node_modules',
    '@electric-sql',
    'pglite',
    'package.json',
  )
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }
  const template = join(tmpdir(), `inbound-dedup-pglite-template-${version}`)
  if (existsSync(join(template, 'PG_VERSION'))) return template
  const building = mkdtempSync(join(tmpdir(), 'inbound-dedup-pglite-building-'))
  const db = await PGlite.create({ dataDir: building })
  await db.close()
  try {
    renameSync(building, template)
  } catch {
    // Someone else finished first (or the directory is in the way): use theirs.
    rmSync(building, { recursive: true, force: true })
    if (!existsSync(join(template, 'PG_VERSION'))) {
      throw new Error(`could not prepare the PGlite template in ${template}`)
    }
  }
  return template
}

/**
 * Opens (or initialises, ~6 s the first time) the database in `dataDir` and serves it.
 * @example
 * const pg = await startEmbeddedPostgres({ dataDir: '.data/pglite' })
 * await migrate(pg.url)
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgres> {
  mkdirSync(options.dataDir, { recursive: true })
  const unlock = lockDataDir(options.dataDir)
  let db: PGlite | undefined
  let server: PgliteWireServer | undefined
  try {
    const pgdata = join(options.dataDir, 'pgdata')
    if (!existsSync(pgdata) && options.fromTemplate !== false) {
      cpSync(await preparePgliteTemplate(), pgdata, { recursive: true })
    }
    // pg_trgm: the console's search index (migration 20261203003003) needs it loaded.
    db = await PGlite.create({ dataDir: pgdata, extensions: { pg_trgm } })
    server = await servePgliteWire({
      db,
      port: options.port ?? 0,
      host: options.host ?? '127.0.0.1',
      maxConnections: options.maxConnections ?? 64,
      holdTimeoutMs: options.holdTimeoutMs,
    })
  } catch (err) {
    await server?.close().catch(() => {})
    await db?.close().catch(() => {})
    unlock()
    if (err instanceof EmbeddedPostgresError) throw err
    throw new EmbeddedPostgresError(
      'start_failed',
      `PGlite did not start in ${options.dataDir}: ${(err as Error).message}`,
      { cause: err },
    )
  }
  const { host, port } = server
  const running = { db, server }
  let stopped: Promise<void> | undefined
  return {
    url: `postgres://postgres@${host}:${port}/postgres`,
    host,
    port,
    dataDir: options.dataDir,
    stats: () => running.server.stats(),
    stop() {
      stopped ??= (async () => {
        await running.server.close()
        await running.db.close()
        unlock()
      })()
      return stopped
    },
  }
}
