/**
 * `npm run dev:sql -- "<SQL>"`: one statement against the database of the running `npm run dev`
 * (found through `.data/dev-stack.json`, as `npm run failures` finds it), or against DATABASE_URL
 * when that is set; the rows printed as a table. The embedded PGlite's address changes at every
 * start, so this is how a newcomer looks at the rows without copying a URL from the banner.
 * @module
 */
import { pathToFileURL } from 'node:url'
import { ConfigError, type OriginEnv, readDatabaseSettings } from '../origin/config'
import { openDatabase } from '../origin/db'
import { describeError } from '../origin/errors'
import { DEV_STACK_FILE, readDevStack } from '../origin/failures/dev-stack'
import { silentLogger } from '../origin/log'
import { type Column, markdownTable } from './markdown-table'

const USAGE = `usage: npm run dev:sql -- "select channel, body from messages order by id desc limit 5"`

/** A cell as one line of text: JSON for objects, dates as ISO, long values cut. */
export function cellText(value: unknown): string {
  if (value === null || value === undefined) return ''
  const text =
    value instanceof Date
      ? value.toISOString()
      : typeof value === 'object'
        ? JSON.stringify(value)
        : String(value)
  const oneLine = text.replace(/\s+/g, ' ')
  return oneLine.length > 80 ? `${oneLine.slice(0, 79)}…` : oneLine
}

/** The rows as a table: text left-aligned, a column of numbers only right-aligned. */
export function sqlTable(rows: readonly Record<string, unknown>[]): string {
  const names = rows[0] ? Object.keys(rows[0]) : []
  const numeric = (name: string) =>
    rows.every((row) => row[name] === null || ['number', 'bigint'].includes(typeof row[name]))
  const columns = names.map(
    (name): Column<Record<string, unknown>> => [
      name,
      (row) => cellText(row[name]),
      numeric(name) ? 'right' : 'left',
    ],
  )
  return markdownTable(columns, rows)
}

export interface SqlIo {
  out: (line: string) => void
  err: (line: string) => void
}

export async function runSql(args: readonly string[], env: OriginEnv, io: SqlIo): Promise<number> {
  const sql = args.join(' ').trim()
  if (!sql) {
    io.err(USAGE)
    return 2
  }
  const dev = env.DATABASE_URL ? null : readDevStack()
  if (!env.DATABASE_URL && !dev) {
    io.err(`no database: start npm run dev (it writes ${DEV_STACK_FILE}) or set DATABASE_URL`)
    return 2
  }
  const problems: string[] = []
  const settings = readDatabaseSettings({ ...env, ...dev }, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  const db = openDatabase(settings, 1, silentLogger)
  try {
    const rows = await db.query<Record<string, unknown>>(sql)
    if (rows.length > 0) io.out(sqlTable(rows))
    io.out(`(${rows.length} ${rows.length === 1 ? 'row' : 'rows'})`)
    return 0
  } catch (err) {
    io.err(`error: ${describeError(err).message ?? 'the statement failed'}`)
    return 1
  } finally {
    await db.close()
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const io = { out: (l: string) => console.log(l), err: (l: string) => console.error(l) }
  runSql(process.argv.slice(2), process.env, io).then(
    (code) => process.exit(code),
    (err: unknown) => {
      io.err(err instanceof ConfigError ? err.problems.join('\n') : String(err))
      process.exit(2)
    },
  )
}
