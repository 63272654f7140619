/**
 * migrations/20261202008001_message_edits.sql goes down and up again on a database in use: down
 * leaves the messages and the functions as 20261202006001 made them (edits and batches work, no
 * history), up brings the history back and it records again.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { migrate } from '../../ops/migrate'
import { openSqlTestbed, type SqlTestbed } from '../support/sql-testbed'

let bed: SqlTestbed

beforeAll(async () => {
  bed = await openSqlTestbed()
})

afterAll(async () => {
  await bed?.close()
})

const migrateDown = () => bed.migrateDown('20261202008001_message_edits.sql')

/** A batch of one event of message `n` (ingest_events(), as the origin sends it). */
async function ingest(kind: 'message' | 'edit', n: number, body: string, minute: number) {
  const event = {
    kind,
    channel: 'slack',
    tenant: 'TMIG',
    messageKey: `TMIG:C1:${n}`,
    sender: 'U1',
    displayName: null,
    body,
    subject: null,
    payloadHash: `hash-${body}`,
    deliveryKey: `Ev${n}-${body}`,
    occurredAt: new Date(Date.UTC(2026, 11, 1, 9, minute)).toISOString(),
    editSeq: null,
    attachments: null,
    references: null,
  }
  const { rows } = await bed.sql.query<{ outcome: string }>(
    'SELECT outcome FROM ingest_events($1::jsonb)',
    [JSON.stringify([event])],
  )
  return rows.map((r) => r.outcome)
}

async function state(n: number) {
  const { rows } = await bed.sql.query<{ body: string }>(
    'SELECT body FROM messages WHERE channel_message_id = $1',
    [`TMIG:C1:${n}`],
  )
  const { rows: table } = await bed.sql.query<{ exists: boolean }>(
    "SELECT to_regclass('message_edits') IS NOT NULL AS exists",
  )
  const history = table[0]?.exists
    ? (
        await bed.sql.query<{ body: string }>(
          `SELECT e.body FROM message_edits e JOIN messages m ON m.id = e.message_id
            WHERE m.channel_message_id = $1 ORDER BY e.edited_at, e.edit_seq NULLS FIRST`,
          [`TMIG:C1:${n}`],
        )
      ).rows.map((r) => r.body)
    : null
  return { bodies: rows.map((r) => r.body), history }
}

const definition = async (fn: string) =>
  (await bed.sql.query<{ def: string }>('SELECT pg_get_functiondef($1::regprocedure) AS def', [fn]))
    .rows[0]?.def ?? ''

const INGEST_MESSAGE =
  'ingest_message(text, text, text, text, text, text, text, text, text, timestamptz, timestamptz, bigint, jsonb, text, text[])'

it('down keeps messages and the previous functions; up again records history again', async () => {
  expect(await ingest('message', 1, 'v1', 0)).toEqual(['created'])
  expect(await ingest('edit', 1, 'v3', 3)).toEqual(['updated'])
  expect(await ingest('edit', 1, 'v2', 2)).toEqual(['known'])
  expect(await ingest('edit', 2, 'e1', 1)).toEqual(['created'])
  expect(await state(1)).toEqual({ bodies: ['v3'], history: ['v2', 'v3'] })
  expect(await state(2)).toEqual({ bodies: ['e1'], history: ['e1'] })

  await migrateDown()
  expect(await state(1)).toEqual({ bodies: ['v3'], history: null })
  const ingestMessage = await definition(INGEST_MESSAGE)
  expect(ingestMessage).toContain('PERFORM lock_message_key') // 20261202000001's version
  expect(ingestMessage).not.toContain('message_edits')
  expect(await definition('batch_apply_edit(jsonb)')).not.toContain('apply_message_edit')
  // Edits, and an edit of a message never seen, work as before the migration.
  expect(await ingest('edit', 1, 'v4', 4)).toEqual(['updated'])
  expect(await ingest('edit', 3, 'e1', 1)).toEqual(['created'])
  expect(await state(1)).toEqual({ bodies: ['v4'], history: null })

  await migrate(bed.database.url)
  expect(await ingest('edit', 1, 'v5', 5)).toEqual(['updated'])
  expect(await ingest('edit', 4, 'e1', 1)).toEqual(['created'])
  expect(await state(1)).toEqual({ bodies: ['v5'], history: ['v5'] })
  expect(await state(4)).toEqual({ bodies: ['e1'], history: ['e1'] })
})
