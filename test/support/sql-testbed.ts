/**
 * A fresh migrated database and one direct client on it, for tests that run SQL files and
 * statements themselves (migrations, tools) rather than going through the origin.
 * @module
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { createTestDatabase, type TestDatabase } from '../../local/services'

export interface SqlTestbed {
  database: TestDatabase
  sql: pg.Client
  /** Runs an INSERT with `RETURNING id::text` appended and returns the id. */
  insert(text: string, values: unknown[]): Promise<string>
  /**
   * The down section of migrations/`{file}` (`{version}_….sql`), run as dbmate runs it: one
   * transaction, then its version forgotten, so `migrate` applies it again.
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
      const text = readFileSync(join(import.meta.dirname, '..', '..', 'migrations', file), 'utf8')
      const down = text.split(/^-- migrate:down\b.*$/m)[1] ?? ''
      if (down.trim() === '') throw new Error(`${file} has no down section`)
      await sql.query('BEGIN')
      try {
        await sql.query(down)
        await sql.query('DELETE FROM schema_migrations WHERE version = $1', [file.split('_')[0]])
        await sql.query('COMMIT')
      } catch (err) {
        await sql.query('ROLLBACK')
        throw err
      }
    },
    async close() {
      await sql.end()
      await database.drop()
    },
  }
}
