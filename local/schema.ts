/**
 * migrations/schema.sql: the schema as the migrations leave it, for reading (every table, index
 * and function as it runs) and for review (a migration's pull request shows its effect as a diff).
 * `npm run schema` rewrites it from a fresh database migrated from scratch; test/local/schema.test.ts
 * fails when it differs from what the migrations make.
 *
 * The dump is pg_dump's `--schema-only --no-owner --no-privileges` (dbmate's own flags), without
 * what changes from one run or pg_dump release to the next rather than with the schema: the random
 * `\restrict` key, the version lines and the session `SET`s. dbmate's schema_migrations rows are not
 * dumped; the header names the newest migration instead. So the file is the same on every machine
 * with a pg_dump of the server's major version.
 * @module
 */
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { MIGRATIONS_DIR, migrationVersions } from '../ops/migrate'
import { createTestDatabase } from './services'

const run = promisify(execFile)

export const SCHEMA_FILE = join(MIGRATIONS_DIR, 'schema.sql')

const PG_DUMP_TIMEOUT_MS = 30_000
const PG_DUMP_MAX_BYTES = 16 * 1024 * 1024

/** The session settings pg_dump writes before the objects (PG 17 adds transaction_timeout). */
const SESSION_SETTING =
  /^(SET (statement_timeout|lock_timeout|idle_in_transaction_session_timeout|transaction_timeout|client_encoding|standard_conforming_strings|check_function_bodies|xmloption|client_min_messages|row_security|default_tablespace|default_table_access_method) = .*;|SELECT pg_catalog\.set_config\('search_path', '', false\);)$/

/** Lines that differ between runs or pg_dump releases, not with the schema. */
const NOISE = [
  /^\\(un)?restrict \S+$/,
  /^-- Dumped (from database|by pg_dump) version .*$/,
  SESSION_SETTING,
]

/** pg_dump's opening and closing banners. */
const BANNER = /^--\n-- PostgreSQL database dump( complete)?\n--\n/gm
/** pg_dump frames each object's name line with two bare `--` lines: one line says it. */
const NAME_FRAME = /^--\n(-- Name: .*)\n--\n/gm

/** pg_dump is not installed (or not on PATH): the schema cannot be dumped. */
export class PgDumpMissingError extends Error {
  readonly code = 'pg_dump_missing'
  constructor() {
    super(
      'pg_dump is not on PATH, so migrations/schema.sql cannot be checked or written: install ' +
        "the server's major version of the Postgres client (Debian: apt-get install postgresql-client-15)",
    )
    this.name = 'PgDumpMissingError'
  }
}

/** pg_dump's version line, e.g. `pg_dump (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)`. */
export async function pgDumpVersion(): Promise<string> {
  return (await pgDump('pg_dump', ['--version'])).trim()
}

export interface DumpOptions {
  /** The pg_dump to run. @default 'pg_dump' (found on PATH) */
  pgDump?: string
}

/** The schema of the database at `databaseUrl`, as migrations/schema.sql holds it. */
export async function dumpSchema(databaseUrl: string, options: DumpOptions = {}): Promise<string> {
  const url = new URL(databaseUrl)
  // The password goes by environment, not argv, where any process of the machine could read it.
  const password = decodeURIComponent(url.password)
  url.password = ''
  const dump = await pgDump(
    options.pgDump ?? 'pg_dump',
    ['--schema-only', '--no-owner', '--no-privileges', '--encoding=UTF8', `--dbname=${url}`],
    password ? { PGPASSWORD: password } : {},
  )
  return normalizeDump(dump, migrationVersions().at(-1) ?? 'none')
}

/** pg_dump's output without its noise, under a header that says what the file is. */
export function normalizeDump(dump: string, newestMigration: string): string {
  const body = dump
    .replace(BANNER, '')
    .split('\n')
    .filter((line) => !NOISE.some((noise) => noise.test(line)))
    .join('\n')
    .replace(NAME_FRAME, '$1\n')
    // Only between objects: a function's body keeps its blank lines as written.
    .replace(/\n{3,}(?=-- Name: )/g, '\n\n')
    .trim()
  return `${header(newestMigration)}\n\n${body}\n`
}

function header(newestMigration: string): string {
  return [
    '-- The schema as migrations/ leaves it: every table, index and function as it runs.',
    '-- Written by `npm run schema` (local/schema.ts) from a database migrated from scratch; do not',
    '-- edit it by hand. npm test fails when it differs from what the migrations make.',
    '-- Read a function here: a migration changes a function only by one whole CREATE OR REPLACE,',
    '-- so the older migrations hold its earlier versions.',
    `-- Newest migration: ${newestMigration}`,
  ].join('\n')
}

async function pgDump(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<string> {
  try {
    const { stdout } = await run(command, args, {
      env: { ...process.env, ...env },
      timeout: PG_DUMP_TIMEOUT_MS,
      maxBuffer: PG_DUMP_MAX_BYTES,
    })
    return stdout
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new PgDumpMissingError()
    const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim()
    throw new Error(`pg_dump failed: ${stderr || (err as Error).message}`)
  }
}

/** Migrates a fresh database on the shared server, dumps it and drops it. */
export async function freshSchema(): Promise<string> {
  const database = await createTestDatabase()
  try {
    return await dumpSchema(database.url)
  } finally {
    await database.drop()
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  freshSchema()
    .then((schema) => writeFile(SCHEMA_FILE, schema))
    .then(
      () => console.log('wrote migrations/schema.sql'),
      (err: Error) => {
        console.error(`schema: ${err.message}`)
        process.exit(1)
      },
    )
}
