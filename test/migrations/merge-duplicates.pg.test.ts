/**
 * migrations/tools/merge-duplicates.sql on a database that predates the unique indexes: the index
 * migration fails while duplicates exist, and after the documented recovery (drop the INVALID
 * index, run the script, migrate again) the indexes build and the oldest row of every group stays.
 */
import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TestDatabase } from '../../local/services'
import { migrate } from '../../ops/migrate'
import { openSqlTestbed, type SqlTestbed } from '../support/sql-testbed'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const INDEX_MIGRATIONS = ['20261130000002', '20261130000003']

let bed: SqlTestbed
let database: TestDatabase
let sql: pg.Client
let insert: SqlTestbed['insert']

beforeAll(async () => {
  bed = await openSqlTestbed()
  ;({ database, sql, insert } = bed)
  // Back to the state before the index migrations: tables only.
  await sql.query('DROP INDEX messages_channel_message_key')
  await sql.query('DROP INDEX conversations_one_pending_key')
  await sql.query('DELETE FROM schema_migrations WHERE version = ANY($1)', [INDEX_MIGRATIONS])
})

afterAll(async () => {
  await bed?.close()
})

const message = (conversationId: string, key: string | null, body: string) =>
  insert(
    `INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id, body,
                           payload_hash, first_delivery_key, occurred_at)
     VALUES ($1, 'slack', $2, 'U1', $3, '0123456789abcdef', 'Ev1', now())`,
    [conversationId, key, body],
  )

const outbox = (messageId: string) =>
  insert(`INSERT INTO outbox (message_id, topic, payload) VALUES ($1, 'message.created', '{}')`, [
    messageId,
  ])

describe('merge-duplicates.sql', () => {
  it('lets the index migrations build on a database holding duplicates, keeping the oldest rows', async () => {
    // Prepare: one customer with two pending slack conversations, a message stored three times
    // (each with an outbox item, one with a failure record), and distinct messages beside them.
    const customer = await insert(
      "INSERT INTO customers (channel, tenant, external_id) VALUES ('slack', 'T1', 'U1')",
      [],
    )
    const conversation = (status: string) =>
      insert("INSERT INTO conversations (customer_id, channel, status) VALUES ($1, 'slack', $2)", [
        customer,
        status,
      ])
    const pendingOld = await conversation('pending')
    const pendingNew = await conversation('pending')
    const closed = await conversation('closed')

    const winner = await message(pendingOld, 'T1:C1:1.0001', 'first copy')
    const winnerOutbox = await outbox(winner)
    const loserA = await message(pendingNew, 'T1:C1:1.0001', 'second copy')
    const loserAOutbox = await outbox(loserA)
    const loserB = await message(closed, 'T1:C1:1.0001', 'third copy')
    await outbox(loserB)
    const failure = await insert(
      `INSERT INTO channel_failures (channel, stage, message_id, outbox_id, error)
       VALUES ('slack', 'downstream', $1, $2, 'boom')`,
      [loserA, loserAOutbox],
    )
    const onlyInNew = await message(pendingNew, 'T1:C1:2.0002', 'a distinct message')
    await message(pendingNew, null, 'no key: never merged')
    await message(pendingNew, null, 'no key: never merged')

    // The index migration refuses while duplicates exist (and leaves an INVALID index).
    await expect(migrate(database.url)).rejects.toThrow(/messages_channel_message_key|duplicate/i)
    await sql.query('DROP INDEX IF EXISTS messages_channel_message_key')

    // Act: the documented recovery.
    const script = await readFile(join(ROOT, 'migrations', 'tools', 'merge-duplicates.sql'), 'utf8')
    const results = (await sql.query(script)) as unknown as pg.QueryResult[]
    const reported = results.flatMap((r) => r.rows ?? [])
    expect(reported).toContainEqual({ duplicate_messages: '2' })
    expect(reported).toContainEqual({ duplicate_pending_conversations: '1' })
    await migrate(database.url)

    // Assess: both unique indexes exist and are valid.
    const indexes = await sql.query(
      `SELECT c.relname AS name, i.indisvalid AS valid, i.indisunique AS unique
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE c.relname IN ('messages_channel_message_key', 'conversations_one_pending_key')
        ORDER BY 1`,
    )
    expect(indexes.rows).toEqual([
      { name: 'conversations_one_pending_key', valid: true, unique: true },
      { name: 'messages_channel_message_key', valid: true, unique: true },
    ])

    // The oldest copy stays, with its own outbox item; the losers and their items are gone.
    const copies = await sql.query(
      "SELECT id::text, body FROM messages WHERE channel_message_id = 'T1:C1:1.0001'",
    )
    expect(copies.rows).toEqual([{ id: winner, body: 'first copy' }])
    const items = await sql.query('SELECT id::text, message_id::text FROM outbox ORDER BY id')
    expect(items.rows).toEqual([{ id: winnerOutbox, message_id: winner }])
    const failures = await sql.query(
      'SELECT message_id::text, outbox_id FROM channel_failures WHERE id = $1',
      [failure],
    )
    expect(failures.rows).toEqual([{ message_id: winner, outbox_id: null }])

    // The older pending conversation stays pending and gets the newer one's messages.
    const conversations = await sql.query(
      'SELECT id::text, status FROM conversations WHERE customer_id = $1 ORDER BY id',
      [customer],
    )
    expect(conversations.rows).toEqual([
      { id: pendingOld, status: 'pending' },
      { id: pendingNew, status: 'closed' },
      { id: closed, status: 'closed' },
    ])
    const moved = await sql.query('SELECT conversation_id::text FROM messages WHERE id = $1', [
      onlyInNew,
    ])
    expect(moved.rows).toEqual([{ conversation_id: pendingOld }])
    expect(
      (await sql.query('SELECT count(*)::int AS n FROM messages WHERE channel_message_id IS NULL'))
        .rows[0].n,
    ).toBe(2)

    // Idempotent: a second run finds nothing to merge.
    const again = ((await sql.query(script)) as unknown as pg.QueryResult[]).flatMap(
      (r) => r.rows ?? [],
    )
    expect(again).toContainEqual({ duplicate_messages: '0' })
    expect(again).toContainEqual({ duplicate_pending_conversations: '0' })
  })
})
