/**
 * migrations/20261204002001_ingest_without_other_key.sql: ingest_message() loses the email key's
 * "other form" (p_other_key) by a new signature, the old one dropped, so exactly one overload
 * stands before and after; down and up again on a database in use, a batch through
 * ingest_events() is ingested the same way at each step.
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

/** Every ingest_message() overload: its parameter names. */
async function overloads(): Promise<string[]> {
  const { rows } = await bed.sql.query<{ args: string }>(
    `SELECT array_to_string(proargnames[1:pronargs], ',') AS args FROM pg_proc
      WHERE proname = 'ingest_message' AND pronamespace = 'public'::regnamespace`,
  )
  return rows.map((r) => r.args)
}

/** One email of message `n` through ingest_events(), as the origin sends a batch. */
async function ingest(n: number): Promise<string[]> {
  const event = {
    ...{ kind: 'message', channel: 'email', tenant: 'support@example.com' },
    ...{ messageKey: `support@example.com:${'a'.repeat(32)}:<m${n}@example.net>`, sender: 'a@x' },
    ...{ displayName: null, body: 'hello', subject: 'hi', payloadHash: `hash-${n}` },
    ...{ deliveryKey: `dedup:email:${n}`, occurredAt: '2026-12-04T09:00:00Z', editSeq: null },
    ...{ attachments: null, references: [] },
  }
  const { rows } = await bed.sql.query<{ outcome: string }>(
    'SELECT outcome FROM ingest_events($1::jsonb)',
    [JSON.stringify([event])],
  )
  return rows.map((r) => r.outcome)
}

it('one ingest_message() without p_other_key; down restores the one with it; up again', async () => {
  const without = await overloads()
  expect(without).toHaveLength(1)
  expect(without[0]).toContain('p_references')
  expect(without[0]).not.toContain('p_other_key')
  expect(await ingest(1)).toEqual(['created'])
  expect(await ingest(1)).toEqual(['known'])

  await bed.migrateDown('20261204002001_ingest_without_other_key.sql')
  const withOther = await overloads()
  expect(withOther).toHaveLength(1)
  expect(withOther[0]).toContain('p_other_key,p_references')
  expect(await ingest(1)).toEqual(['known'])
  expect(await ingest(2)).toEqual(['created'])

  await migrate(bed.database.url)
  expect(await overloads()).toEqual(without)
  expect(await ingest(2)).toEqual(['known'])
  expect(await ingest(3)).toEqual(['created'])
})
