/**
 * A fresh migrated database and one direct client on it, for tests that run SQL files and
 * statements themselves (migrations, tools) rather than going through the origin.
 * @module
 */
import pg from 'pg'
import { createTestDatabase, type TestDatabase } from '../../local/services'

export interface SqlTestbed {
  database: TestDatabase
  sql: pg.Client
  /** Runs an INSERT with `RETURNING id::text` appended and returns the id. */
  insert(text: string, values: unknown[]): Promise<string>
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
    async close() {
      await sql.end()
      await database.drop()
    },
  }
}
