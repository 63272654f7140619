/**
 * Applies migrations/ with dbmate (its npm package ships the binary). `npm run migrate` runs this
 * against `DATABASE_URL`; the dev stack and the test setup call `migrate()` directly.
 *
 * A migration that locks a live table sets `SET LOCAL lock_timeout` (the rule is checked by
 * test/migrations/migration-locks.pg.test.ts): behind a long transaction on that table it fails at
 * once with lock_not_available (55P03) instead of holding every write to the table in the queue
 * behind its own wait. Such a failure is retried here, after a pause that grows, a bounded number
 * of times: dbmate recorded every migration before it, so a retry starts at the one that failed.
 * @module
 */
import { execFile } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const MIGRATIONS_DIR = join(root, 'migrations')
/** dbmate's migration file name: `{version}_{name}.sql`; any other file of migrations/ is not one. */
const MIGRATION_FILE = /^(\d+)_.*\.sql$/

/** The migration files of migrations/, oldest first. */
export function migrationFiles(dir = MIGRATIONS_DIR): string[] {
  return readdirSync(dir)
    .filter((file) => MIGRATION_FILE.test(file))
    .sort()
}

/** Versions of migrations/ (dbmate's file name prefix), oldest first. */
export function migrationVersions(dir = MIGRATIONS_DIR): string[] {
  return migrationFiles(dir).map((file) => file.split('_')[0] as string)
}

/** Pauses before each retry of a lock timeout: 8 attempts over about two minutes. */
const LOCK_RETRY_DELAYS_MS = [1_000, 2_000, 4_000, 8_000, 15_000, 30_000, 30_000]

export interface LockRetry {
  /** The attempt that timed out (1 = the first). */
  attempt: number
  /** The migration file that could not take its lock. */
  migration: string
  delayMs: number
}

export interface MigrateOptions {
  /** The pauses before each retry of a lock timeout; as many retries as entries. */
  lockRetryDelaysMs?: readonly number[]
  /** Told before each pause (the CLI prints it). */
  onLockRetry?: (retry: LockRetry) => void
}

/** A migration still could not take its table lock within its lock_timeout after every retry. */
export class MigrationLockError extends Error {
  readonly code = 'migration_lock_timeout'
  constructor(
    readonly migration: string,
    attempts: number,
  ) {
    super(
      `${migration} could not lock its table within its lock_timeout in ${attempts} attempts ` +
        '(55P03): a long transaction holds the table. Find it in pg_stat_activity ' +
        "(state 'idle in transaction', or an old xact_start), end it, and run the migration again.",
    )
    this.name = 'MigrationLockError'
  }
}

/** dbmate talks TCP to Postgres; a local server without TLS needs sslmode=disable spelled out. */
export function dbmateUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl)
  const local = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(url.hostname)
  if (local && !url.searchParams.has('sslmode')) url.searchParams.set('sslmode', 'disable')
  return url.toString()
}

export async function migrate(databaseUrl: string, options: MigrateOptions = {}): Promise<string> {
  const delays = options.lockRetryDelaysMs ?? LOCK_RETRY_DELAYS_MS
  let applied = ''
  for (let attempt = 1; ; attempt++) {
    try {
      return applied + (await dbmateUp(databaseUrl))
    } catch (err) {
      const migration = lockTimedOut(err)
      if (migration === null) throw err
      applied += appliedBefore(err, migration)
      const delayMs = delays[attempt - 1]
      if (delayMs === undefined) throw new MigrationLockError(migration, attempt)
      options.onLockRetry?.({ attempt, migration, delayMs })
      await new Promise((resolve) => setTimeout(resolve, delayMs))
    }
  }
}

async function dbmateUp(databaseUrl: string): Promise<string> {
  const { stdout } = await run(
    join(root, 'node_modules', '.bin', 'dbmate'),
    [
      '--url',
      dbmateUrl(databaseUrl),
      '--migrations-dir',
      MIGRATIONS_DIR,
      // migrations/schema.sql is `npm run schema`'s (local/schema.ts), from a fresh database only.
      '--no-dump-schema',
      '--wait',
      '--wait-timeout',
      '10s',
      'up',
    ],
    { timeout: 60_000 },
  )
  return stdout
}

/**
 * The migration a failed `dbmate up` was applying when its lock wait timed out, else null. dbmate
 * prints the SQLSTATE after Postgres's message (`… lock timeout (55P03)`), whatever its language.
 */
function lockTimedOut(err: unknown): string | null {
  const { stdout, stderr } = err as { stdout?: unknown; stderr?: unknown }
  if (typeof stderr !== 'string' || !/\(55P03\)/.test(stderr)) return null
  return typeof stdout === 'string' ? lastApplying(stdout) : null
}

/** What the failed run applied before `migration` (dbmate recorded it; the retry starts after). */
function appliedBefore(err: unknown, migration: string): string {
  const stdout = String((err as { stdout?: unknown }).stdout ?? '')
  return stdout.slice(0, stdout.lastIndexOf(`Applying: ${migration}`))
}

function lastApplying(stdout: string): string | null {
  const names = [...stdout.matchAll(/^Applying: (\S+)$/gm)].map((match) => match[1])
  return names.at(-1) ?? null
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const url = process.env.DATABASE_URL
  if (!url) {
    console.error('DATABASE_URL is not set: point it at the Postgres to migrate')
    process.exit(2)
  }
  const onLockRetry = ({ attempt, migration, delayMs }: LockRetry) =>
    console.error(
      `migrate: ${migration} timed out waiting for its table lock (attempt ${attempt}, 55P03); ` +
        `a long transaction holds the table; retrying in ${delayMs / 1000} s`,
    )
  migrate(url, { onLockRetry }).then(
    (out) => process.stdout.write(out || 'migrations: up to date\n'),
    (err: Error & { stderr?: string }) => {
      console.error(`migrate failed: ${err.stderr?.trim() || err.message}`)
      process.exit(1)
    },
  )
}
