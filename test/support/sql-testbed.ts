/**
 * A fresh migrated database and one direct client on it, for tests that run SQL files and
 * statements themselves (migrations, tools) rather than going through the origin.
 * @module
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { createTestDatabase, type TestDatabase } from '../../local/services'
import { dbmateUrl, MIGRATIONS_DIR, migrationFiles } from '../../ops/migrate'

export interface SqlTestbed {
  database: TestDatabase
  sql: pg.Client
  /** Runs an INSERT with `RETURNING id::text` appended and returns the id. */
  insert(text: string, values: unknown[]): Promise<string>
  /**
   * migrations/`{file}` (`{version}_….sql`) rolled back by `dbmate rollback`, run until it is:
   * each newer migration's down section first, newest first (a later one may re-create what this
   * one's down expects), then its own; `migrate` applies them again.
   */
  migrateDown(file: string): Promise<void>
  close(): Promise<void>
}

export async function openSqlTestbed(): Promise<SqlTestbed> {
  const database = await createTestDatabase()
  const sql = new pg.Client({ connectionString: database.url })
  await sql.connect()
  return {
    database,
    sql,
    async insert(text, values) {
      const { rows } = await sql.query<{ id: string }>(`${text} RETURNING id::text`, values)
      if (!rows[0]) throw new Error('insert returned no row')
      return rows[0].id
    },
    async migrateDown(file) {
      const files = migrationFiles()
      if (!files.includes(file)) throw new Error(`${file} is not a migration of migrations/`)
      const version = file.split('_')[0]
      const applied = async () =>
        (await sql.query('SELECT 1 FROM schema_migrations WHERE version = $1', [version]))
          .rowCount === 1
      // Bounded: one rollback per migration at most.
      for (let left = files.length; left > 0 && (await applied()); left--) {
        await dbmateRollback(database.url)
      }
      if (await applied()) throw new Error(`${file} is still applied`)
    },
    async close() {
      await sql.end()
      await database.drop()
    },
  }
}

/** `dbmate rollback`: the newest applied migration's down section, as dbmate runs it. */
async function dbmateRollback(databaseUrl: string): Promise<void> {
  const dbmate = join(MIGRATIONS_DIR, '..', 'node_modules', '.bin', 'dbmate')
  const args = ['--url', dbmateUrl(databaseUrl), '--migrations-dir', MIGRATIONS_DIR]
  await promisify(execFile)(dbmate, [...args, '--no-dump-schema', 'rollback'], { timeout: 60_000 })
}
