/**
 * migrations/20261203001001_message_undelete.sql goes down and up again on a database in use: down
 * leaves the messages (and a deleted one deleted) and the functions as before it (deletes work, an
 * undelete is no kind the batch knows); up brings undeletes back, ordered by time.
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

const migrateDown = () => bed.migrateDown('20261203001001_message_undelete.sql')

/** One event of message `n` through ingest_events(), as the origin sends a batch. */
async function ingest(kind: string, n: number, second: number) {
  const event = {
    ...{ kind, channel: 'teams', tenant: 'BOT', messageKey: `BOT:msteams:c1:${n}`, sender: 'U1' },
    ...{ displayName: null, body: kind === 'message' ? 'hello' : '', subject: null },
    ...{
      payloadHash: `hash-${kind}-${second}`,
      deliveryKey: `dedup:teams:BOT:${n}:${kind}:${second}`,
    },
    ...{ occurredAt: new Date(Date.UTC(2026, 11, 3, 9, 0, second)).toISOString(), editSeq: null },
    ...{ attachments: null, references: null },
  }
  const { rows } = await bed.sql.query<{ outcome: string }>(
    'SELECT outcome FROM ingest_events($1::jsonb)',
    [JSON.stringify([event])],
  )
  return rows.map((r) => r.outcome)
}

async function deleted(n: number) {
  const { rows } = await bed.sql.query<{ deleted: boolean }>(
    'SELECT deleted_at IS NOT NULL AS deleted FROM messages WHERE channel_message_id = $1',
    [`BOT:msteams:c1:${n}`],
  )
  return rows.map((r) => r.deleted)
}

it('down keeps messages and their deletes; up again orders undeletes by time', async () => {
  expect(await ingest('message', 1, 0)).toEqual(['created'])
  expect(await ingest('delete', 1, 4)).toEqual(['updated'])
  expect(await ingest('undelete', 1, 9)).toEqual(['updated'])
  expect(await ingest('delete', 1, 12)).toEqual(['updated'])
  expect(await deleted(1)).toEqual([true])

  await migrateDown()
  expect(await deleted(1)).toEqual([true])
  const { rows } = await bed.sql.query(
    "SELECT 1 FROM information_schema.columns WHERE table_name = 'messages' AND column_name = 'restored_at'",
  )
  expect(rows).toEqual([])
  expect(await ingest('message', 2, 0)).toEqual(['created'])
  expect(await ingest('delete', 2, 4)).toEqual(['updated'])
  expect(await ingest('delete', 3, 4)).toEqual(['ignored'])
  expect(await ingest('message', 3, 0)).toEqual(['created'])
  expect(await deleted(3)).toEqual([true])

  await migrate(bed.database.url)
  expect(await ingest('undelete', 2, 9)).toEqual(['updated'])
  expect(await ingest('undelete', 1, 10)).toEqual(['known'])
  expect([await deleted(1), await deleted(2)]).toEqual([[true], [false]])
})
