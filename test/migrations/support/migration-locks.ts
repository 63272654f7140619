/**
 * The rule every migration file keeps (test/migrations/migration-locks.pg.test.ts): a migration
 * that takes a table lock stronger than a write's on a table an earlier migration created runs in a
 * transaction and sets `SET LOCAL lock_timeout` first. Such a lock waits behind any long
 * transaction on the table, and every write queues behind the waiting lock; the timeout bounds
 * that, and `npm run migrate` retries (ops/migrate.ts).
 *
 * What counts is read from the SQL with patterns (comments removed): ALTER TABLE, CREATE INDEX and
 * DROP INDEX without CONCURRENTLY (which takes no lock that blocks writes), DROP TABLE, TRUNCATE,
 * LOCK TABLE, REINDEX, CREATE TRIGGER, and REFERENCES (a foreign key locks the table it names).
 * @module
 */

export interface MigrationFile {
  name: string
  text: string
}

export interface LockProblem {
  file: string
  problem: string
}

const LOCKING_STATEMENTS: { pattern: RegExp; names: 'table' | 'index' }[] = [
  { pattern: /\bALTER\s+TABLE\s+(?:IF\s+EXISTS\s+)?(?:ONLY\s+)?(\w+)/gi, names: 'table' },
  {
    pattern:
      /\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+(?!CONCURRENTLY\b)(?:IF\s+NOT\s+EXISTS\s+)?(?:\w+\s+)?ON\s+(?:ONLY\s+)?(\w+)/gi,
    names: 'table',
  },
  { pattern: /\bDROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?(\w+)/gi, names: 'table' },
  { pattern: /\bDROP\s+INDEX\s+(?!CONCURRENTLY\b)(?:IF\s+EXISTS\s+)?(\w+)/gi, names: 'index' },
  { pattern: /\b(?:TRUNCATE|LOCK)\s+(?:TABLE\s+)?(?:ONLY\s+)?(\w+)/gi, names: 'table' },
  { pattern: /\bREINDEX\s+TABLE\s+(\w+)/gi, names: 'table' },
  { pattern: /\bREINDEX\s+INDEX\s+(\w+)/gi, names: 'index' },
  {
    pattern: /\bCREATE\s+(?:OR\s+REPLACE\s+)?TRIGGER\s+\w+\s[\s\S]*?\bON\s+(\w+)/gi,
    names: 'table',
  },
  { pattern: /\bREFERENCES\s+(\w+)/gi, names: 'table' },
]

const CREATED_TABLE = /\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)/gi
const CREATED_INDEX =
  /\bCREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:CONCURRENTLY\s+)?(?:IF\s+NOT\s+EXISTS\s+)?(\w+)\s+ON\s+(?:ONLY\s+)?(\w+)/gi
const LOCK_TIMEOUT_FIRST = /^\s*SET\s+LOCAL\s+lock_timeout\s*=\s*'(\d+)(ms|s)'\s*;/i

/** The up section of a dbmate file, without comments, and whether dbmate wraps it in a transaction. */
export function upSection(text: string): { sql: string; transaction: boolean } {
  const up = text.split(/^-- migrate:down\b/m)[0] ?? ''
  const header = /^-- migrate:up\b(.*)$/m.exec(up)
  return {
    sql: up.replace(/--[^\n]*/g, ''),
    transaction: !/\btransaction:false\b/.test(header?.[1] ?? ''),
  }
}

/** Every file, in order, against the rule; `maxLockTimeoutMs` bounds the timeout each one sets. */
export function lockProblems(
  files: readonly MigrationFile[],
  maxLockTimeoutMs: number,
): LockProblem[] {
  const tables = new Set<string>()
  const indexTables = new Map<string, string>()
  const problems: LockProblem[] = []
  for (const file of [...files].sort((a, b) => a.name.localeCompare(b.name))) {
    const { sql, transaction } = upSection(file.text)
    const existing = lockedTables(sql, indexTables).filter((table) => tables.has(table))
    if (existing.length > 0) {
      const problem = checkFile(sql, transaction, existing, maxLockTimeoutMs)
      if (problem) problems.push({ file: file.name, problem })
    }
    for (const [, table] of sql.matchAll(CREATED_TABLE)) tables.add(lower(table))
    for (const [, index, table] of sql.matchAll(CREATED_INDEX)) {
      indexTables.set(lower(index), lower(table))
    }
  }
  return problems
}

function checkFile(
  sql: string,
  transaction: boolean,
  existing: string[],
  maxLockTimeoutMs: number,
): string | null {
  const on = `locks ${[...new Set(existing)].join(', ')}`
  if (!transaction) return `${on} outside a transaction (transaction:false)`
  const timeout = LOCK_TIMEOUT_FIRST.exec(sql)
  if (!timeout) return `${on} without SET LOCAL lock_timeout = '…' as its first statement`
  const ms = Number(timeout[1]) * (timeout[2]?.toLowerCase() === 's' ? 1000 : 1)
  if (ms <= 0 || ms > maxLockTimeoutMs) {
    return `${on} with lock_timeout ${ms} ms (more than ${maxLockTimeoutMs} ms, or none)`
  }
  return null
}

function lockedTables(sql: string, indexTables: ReadonlyMap<string, string>): string[] {
  return LOCKING_STATEMENTS.flatMap(({ pattern, names }) =>
    [...sql.matchAll(pattern)].flatMap(([, name]) => {
      const table = names === 'index' ? indexTables.get(lower(name)) : lower(name)
      return table ? [table] : []
    }),
  )
}

function lower(name: string | undefined): string {
  return (name ?? '').toLowerCase()
}
