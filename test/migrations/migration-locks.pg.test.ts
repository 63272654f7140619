/**
 * Migrations on live tables (issue 19, item 9). `ALTER TABLE messages …` needs the table to
 * itself: behind a long transaction that reads messages it waits, and every ingest queues behind
 * it. Each migration that locks a table of an earlier migration sets `SET LOCAL lock_timeout`
 * (the rule: test/migrations/support/migration-locks.ts), so it gives up at once, and `npm run
 * migrate` (ops/migrate.ts) retries it, with pauses, until the blocker is gone or its retries run
 * out.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import {
  type LockRetry,
  MIGRATIONS_DIR,
  MigrationLockError,
  migrate,
  migrationFiles,
} from '../../ops/migrate'
import { DB_QUERY_TIMEOUT_MS } from '../../origin/config'
import { openSqlTestbed, type SqlTestbed } from '../support/sql-testbed'
import { eventually } from '../support/test-stack'
import { lockProblems, type MigrationFile } from './support/migration-locks'

/** Writes that queue behind a migration's lock wait must still finish inside their own timeout. */
const MAX_LOCK_TIMEOUT_MS = DB_QUERY_TIMEOUT_MS.default / 2

describe('every migration file', () => {
  it('that locks a table of an earlier migration runs in a transaction, lock_timeout set first', () => {
    const files: MigrationFile[] = migrationFiles().map((name) => ({
      name,
      text: readFileSync(join(MIGRATIONS_DIR, name), 'utf8'),
    }))
    expect(files.length).toBeGreaterThan(10)
    expect(lockProblems(files, MAX_LOCK_TIMEOUT_MS)).toEqual([])
  })

  it('the rule: what takes such a lock, and what does not', () => {
    const file = (name: string, up: string, header = ''): MigrationFile => ({
      name,
      text: `-- migrate:up${header}\n${up}\n-- migrate:down\nDROP TABLE t;\n`,
    })
    const base = file('1_base.sql', 'CREATE TABLE t (id int);\nCREATE INDEX t_idx ON t (id);')
    const check = (...later: MigrationFile[]) =>
      lockProblems([base, ...later], MAX_LOCK_TIMEOUT_MS).map((p) => `${p.file}: ${p.problem}`)

    expect(check(file('2.sql', 'ALTER TABLE t ADD COLUMN x int;'))).toEqual([
      "2.sql: locks t without SET LOCAL lock_timeout = '…' as its first statement",
    ])
    expect(
      check(file('2.sql', "SET LOCAL lock_timeout = '2s';\nALTER TABLE t ADD x int;")),
    ).toEqual([])
    expect(
      check(file('2.sql', "SET LOCAL lock_timeout = '1min';\nDROP INDEX t_idx;")),
    ).toHaveLength(1)
    expect(check(file('2.sql', "SET LOCAL lock_timeout = '9s';\nTRUNCATE t;"))).toEqual([
      '2.sql: locks t with lock_timeout 9000 ms (more than 2500 ms, or none)',
    ])
    expect(check(file('2.sql', 'CREATE TABLE u (t_id int REFERENCES t (id));'))).toHaveLength(1)
    expect(
      check(file('2.sql', 'CREATE TRIGGER x AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION f();')),
    ).toHaveLength(1)
    expect(
      check(file('2.sql', 'CREATE INDEX CONCURRENTLY t2_idx ON t (id);', ' transaction:false')),
    ).toEqual([])
    expect(check(file('2.sql', 'ALTER TABLE t ADD x int;', ' transaction:false'))).toEqual([
      '2.sql: locks t outside a transaction (transaction:false)',
    ])
    // A table of the same file, and a comment naming one, lock nothing anyone else waits for.
    expect(
      check(file('2.sql', '-- ALTER TABLE t\nCREATE TABLE u (id int);\nCREATE INDEX ON u (id);')),
    ).toEqual([])
  })
})

/**
 * A database migrated but for 20261201000006 (ALTER TABLE messages ADD COLUMN attachments …
 * DEFAULT), which the next `migrate` applies; and a transaction reading messages, kept open.
 */
async function blockedMigration(): Promise<{
  bed: SqlTestbed
  blocker: pg.Client
  end(): Promise<void>
}> {
  const bed = await openSqlTestbed()
  await bed.sql.query('ALTER TABLE messages DROP COLUMN attachments')
  await bed.sql.query("DELETE FROM schema_migrations WHERE version = '20261201000006'")
  const blocker = new pg.Client({ connectionString: bed.database.url })
  await blocker.connect()
  await blocker.query('BEGIN')
  await blocker.query('SELECT count(*) FROM messages')
  return {
    bed,
    blocker,
    async end() {
      await blocker.query('ROLLBACK').catch(() => {})
      await blocker.end()
      await bed.close()
    },
  }
}

describe('npm run migrate while a long transaction holds a table', () => {
  it('gives up the lock wait at once, writes go on, and retries until the blocker ends', async () => {
    const { bed, blocker, end } = await blockedMigration()
    try {
      const retries: LockRetry[] = []
      const migrating = migrate(bed.database.url, {
        lockRetryDelaysMs: Array(50).fill(100),
        onLockRetry: (retry) => retries.push(retry),
      })
      const settled = migrating.then(
        (stdout) => ({ stdout }),
        (error: unknown) => ({ error }),
      )
      await eventually(async () => retries.length > 0, 15_000)
      expect(retries[0]).toMatchObject({
        attempt: 1,
        migration: '20261201000006_message_attachments.sql',
      })

      // A write to the table: at most one lock_timeout behind the migration's wait, then through.
      const writer = new pg.Client({ connectionString: bed.database.url, statement_timeout: 4000 })
      await writer.connect()
      try {
        const customer = await writer.query<{ id: string }>(
          "INSERT INTO customers (channel, tenant, external_id) VALUES ('sms', 'AC1', '+1') RETURNING id",
        )
        const conversation = await writer.query<{ id: string }>(
          "INSERT INTO conversations (customer_id, channel) VALUES ($1, 'sms') RETURNING id",
          [customer.rows[0]?.id],
        )
        await writer.query(
          `INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id,
                                 payload_hash, first_delivery_key, occurred_at)
           VALUES ($1, 'sms', 'AC1:SM1', '+1', '0123456789abcdef', 'd', now())`,
          [conversation.rows[0]?.id],
        )
      } finally {
        await writer.end()
      }

      await blocker.query('COMMIT')
      const outcome = await settled
      expect(outcome).toMatchObject({
        stdout: expect.stringMatching(/Applied: 20261201000006_message_attachments\.sql/),
      })
      const { rows } = await bed.sql.query<{ attachments: unknown }>(
        "SELECT attachments FROM messages WHERE channel_message_id = 'AC1:SM1'",
      )
      expect(rows).toEqual([{ attachments: [] }])
    } finally {
      await end()
    }
  })

  it('after its last retry, fails with an error naming the migration and the cause', async () => {
    const { bed, end } = await blockedMigration()
    try {
      const retries: LockRetry[] = []
      const failure = await migrate(bed.database.url, {
        lockRetryDelaysMs: [50],
        onLockRetry: (retry) => retries.push(retry),
      }).then(
        () => null,
        (error: unknown) => error,
      )
      expect(retries).toHaveLength(1)
      expect(failure).toBeInstanceOf(MigrationLockError)
      expect(failure).toMatchObject({
        code: 'migration_lock_timeout',
        migration: '20261201000006_message_attachments.sql',
      })
      expect((failure as Error).message).toMatch(
        /20261201000006_message_attachments\.sql.*lock_timeout.*2 attempts/s,
      )
      expect((failure as Error).message).not.toContain(bed.database.url)
    } finally {
      await end()
    }
  })
})
