/**
 * A delete racing its message's first insert (issue 19, item 3). The delete finds no row, writes
 * its tombstone and looks once more; the insert reads the tombstone. Without a lock between them,
 * an insert whose snapshot predates the tombstone and which commits after the delete's second
 * look stores the message undeleted: neither side sees the other.
 *
 * The interleavings are forced with gates: test-only triggers that wait, inside the statement
 * that fired them, for a table this test holds locked in an open transaction. One gate stops the
 * message insert after its row is written (its snapshot, the tombstone look included, is taken);
 * the other stops the delete's tombstone insert before it commits. Every wait below polls
 * pg_locks for who waits where; nothing depends on sleeping long enough.
 */
import pg from 'pg'
import { beforeAll, describe, expect, it } from 'vitest'
import type { InboundEvent } from '../../contract/event'
import { fileTestbed } from '../support/for-file'
import { eventFixture } from '../support/origin'
import { eventually } from '../support/test-stack'

const bed = fileTestbed()

const MESSAGE_GATE = 'test_gate_message_insert'
const TOMBSTONE_GATE = 'test_gate_tombstone_insert'

beforeAll(async () => {
  await bed.sql.query(`
    CREATE TABLE ${MESSAGE_GATE} ();
    CREATE TABLE ${TOMBSTONE_GATE} ();
    CREATE FUNCTION test_wait_at_gate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN EXECUTE format('SELECT 1 FROM %I', TG_ARGV[0]); RETURN NULL; END $$;
    CREATE TRIGGER test_gate AFTER INSERT ON messages
      FOR EACH STATEMENT EXECUTE FUNCTION test_wait_at_gate('${MESSAGE_GATE}');
    CREATE TRIGGER test_gate AFTER INSERT ON message_tombstones
      FOR EACH STATEMENT EXECUTE FUNCTION test_wait_at_gate('${TOMBSTONE_GATE}');`)
})

/** Closes a gate (its table locked in an open transaction); the function returned opens it. */
async function closeGate(table: string): Promise<() => Promise<void>> {
  const holder = new pg.Client({ connectionString: bed.databaseUrl })
  await holder.connect()
  await holder.query('BEGIN')
  await holder.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`)
  return async () => {
    await holder.query('COMMIT')
    await holder.end()
  }
}

/** Lock requests of this database not granted yet: at a gate (a table), or on an advisory lock. */
async function waiting(): Promise<{ gates: string[]; advisory: number }> {
  const { rows } = await bed.sql.query<{ locktype: string; relname: string | null }>(
    `SELECT l.locktype, c.relname FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation
      WHERE NOT l.granted
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  )
  return {
    gates: rows.flatMap((row) => (row.relname ? [row.relname] : [])),
    advisory: rows.filter((row) => row.locktype === 'advisory').length,
  }
}

/** A POST whose answer can be awaited later, and asked meanwhile whether it came. */
function inFlight(event: InboundEvent) {
  const request = { answered: false, answer: bed.post(event) }
  request.answer.then(
    () => {
      request.answered = true
    },
    () => {
      request.answered = true
    },
  )
  return request
}

async function messageWithDelete(): Promise<{ original: InboundEvent; del: InboundEvent }> {
  const original = await eventFixture({ occurredAt: '2026-12-01T09:00:00.000Z' })
  const del = await eventFixture({
    kind: 'delete',
    messageKey: original.messageKey,
    deliveryKey: `${original.deliveryKey}-delete`,
    body: '',
    occurredAt: '2026-12-01T09:00:30.000Z',
  })
  return { original, del }
}

async function rowsOf(event: InboundEvent) {
  const { rows } = await bed.sql.query<{ deleted_at: Date | null }>(
    'SELECT deleted_at FROM messages WHERE channel = $1 AND channel_message_id = $2',
    [event.channel, event.messageKey],
  )
  return rows
}

describe('a delete racing its message’s first insert', () => {
  it('delete during the insert (the insert’s snapshot predates the tombstone): the row ends deleted', async () => {
    const { original, del } = await messageWithDelete()
    const openMessageGate = await closeGate(MESSAGE_GATE)
    const inserting = inFlight(original)
    await eventually(async () => (await waiting()).gates.includes(MESSAGE_GATE))

    const deleting = inFlight(del)
    // Unlocked, the delete answers now (nothing seen); locked, it waits for the insert's key.
    await eventually(async () => deleting.answered || (await waiting()).advisory > 0)
    await openMessageGate()

    expect((await inserting.answer).status).toBe(201)
    expect((await deleting.answer).body.outcome).toBe('updated')
    const rows = await rowsOf(original)
    expect(rows).toHaveLength(1)
    expect(rows[0]?.deleted_at?.toISOString()).toBe(del.occurredAt)
  })

  it('insert during the delete (the tombstone not committed yet): the row ends deleted', async () => {
    const { original, del } = await messageWithDelete()
    const openTombstoneGate = await closeGate(TOMBSTONE_GATE)
    const deleting = inFlight(del)
    await eventually(async () => (await waiting()).gates.includes(TOMBSTONE_GATE))

    const openMessageGate = await closeGate(MESSAGE_GATE)
    const inserting = inFlight(original)
    // Unlocked, the insert runs (no tombstone visible) to its gate; locked, it waits for the key.
    await eventually(async () => {
      const now = await waiting()
      return now.gates.includes(MESSAGE_GATE) || now.advisory > 0
    })
    await openTombstoneGate()
    expect((await deleting.answer).body.outcome).toBe('ignored')
    await openMessageGate()

    expect((await inserting.answer).status).toBe(201)
    const rows = await rowsOf(original)
    expect(rows).toHaveLength(1)
    expect(rows[0]?.deleted_at?.toISOString()).toBe(del.occurredAt)
  })

  it('a delete whose message never arrives: ignored, its tombstone kept, no row', async () => {
    const { original, del } = await messageWithDelete()
    expect((await bed.post(del)).body.outcome).toBe('ignored')
    const { rows } = await bed.sql.query<{ deleted_at: Date; delivery_key: string }>(
      `SELECT deleted_at, delivery_key FROM message_tombstones
        WHERE channel = $1 AND channel_message_id = $2`,
      [del.channel, del.messageKey],
    )
    expect(rows.map((row) => [row.deleted_at.toISOString(), row.delivery_key])).toEqual([
      [del.occurredAt, del.deliveryKey],
    ])
    expect(await rowsOf(original)).toEqual([])
  })

  it('the lock is the message key’s: another key’s insert does not wait for it', async () => {
    const held = await messageWithDelete()
    const other = await messageWithDelete()
    const holder = new pg.Client({ connectionString: bed.databaseUrl })
    await holder.connect()
    try {
      await holder.query('BEGIN')
      await holder.query('SELECT lock_message_key($1, $2)', [
        held.original.channel,
        held.original.messageKey,
      ])
      expect((await bed.post(other.original)).status).toBe(201)
      const blocked = inFlight(held.original)
      await eventually(async () => (await waiting()).advisory > 0)
      expect(blocked.answered).toBe(false)
      await holder.query('COMMIT')
      expect((await blocked.answer).status).toBe(201)
    } finally {
      await holder.end()
    }
  })
})
