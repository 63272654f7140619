/**
 * Batched ingest (`ingest_events()`, origin/ingest.ts ingestEvents) answers every event as single
 * ingest does. Property-style, against real Postgres: the same random event sets (duplicates
 * within one batch, edits, deletes and undeletes of messages of the same batch, out of order, email replies
 * threading into messages of the batch) go one by one into one database and
 * as batches into another; each event's answer and the rows left behind must be the same (ids
 * compared by the order in which they first appear).
 */
import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { finalizeEvent, type InboundEvent, type IngestResult } from '../../contract/event'
import { emailSenderKeyPart } from '../../email/keys'
import { createTestDatabase, type TestDatabase } from '../../local/services'
import { createDatabase, type Database } from '../../origin/db'
import { ingestEvent, ingestEvents } from '../../origin/ingest'
import { silentLogger } from '../../origin/log'

interface Side {
  database: TestDatabase
  db: Database
}

let single: Side
let batched: Side

async function openSide(): Promise<Side> {
  const database = await createTestDatabase()
  const db = createDatabase({
    driver: 'pg',
    databaseUrl: database.url,
    poolMax: 4,
    connectTimeoutMs: 10_000,
    queryTimeoutMs: 10_000,
    logger: silentLogger,
  })
  return { database, db }
}

beforeAll(async () => {
  single = await openSide()
  batched = await openSide()
}, 60_000)

afterAll(async () => {
  for (const side of [single, batched]) {
    await side?.db.close()
    await side?.database.drop()
  }
})

/** The database, counting the statements sent through it. */
function countingStatements(db: Database): { db: Database; statements: number } {
  const counter = { db, statements: 0 }
  counter.db = {
    ...db,
    query: (text, values, options) => {
      counter.statements++
      return db.query(text, values, options)
    },
    transaction: (work) => {
      counter.statements++
      return db.transaction(work)
    },
    withSignal: () => counter.db,
  }
  return counter
}

/** One generated step: which message (of a small pool, so they collide), what happens to it. */
interface Step {
  kind: 'message' | 'edit' | 'delete' | 'undelete'
  channel: 'slack' | 'telegram' | 'email'
  message: number
  sender: number
  text: number
  minute: number
  seq: number
  replyTo: number | null
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom('message', 'message', 'edit', 'delete', 'undelete'),
  channel: fc.constantFrom('slack', 'telegram', 'email'),
  message: fc.integer({ min: 0, max: 5 }),
  sender: fc.integer({ min: 0, max: 2 }),
  text: fc.integer({ min: 0, max: 2 }),
  minute: fc.integer({ min: 0, max: 3 }),
  seq: fc.integer({ min: 1, max: 3 }),
  replyTo: fc.option(fc.integer({ min: 0, max: 5 })),
})

/** The event of a step, under tenants of its own run (runs do not see each other's rows). */
async function eventOf(step: Step, run: string): Promise<InboundEvent> {
  const sender = `user${step.sender}@example.org`
  const occurredAt = new Date(Date.UTC(2026, 11, 1, 8, step.minute)).toISOString()
  const common = {
    kind: step.kind === 'message' ? ('message' as const) : step.kind,
    body: `text ${step.text}`,
    occurredAt,
    ...(step.kind === 'edit' ? { editSeq: step.seq } : {}),
  }
  if (step.channel === 'email') {
    const mailbox = `support-${run}@example.com`
    const part = await emailSenderKeyPart(sender)
    const key = (n: number) => `${mailbox}:${part}:<m${n}@mail.example>`
    const messageKey = key(step.message)
    return finalizeEvent({
      ...common,
      channel: 'email',
      tenant: mailbox,
      messageKey,
      deliveryKey: `dedup:email:${messageKey}`,
      sender: { externalId: sender, displayName: `User ${step.sender}` },
      subject: `Subject ${step.message}`,
      ...(step.replyTo === null ? {} : { references: [key(step.replyTo)] }),
    })
  }
  const tenant = `T${run}`
  const messageKey = `${tenant}:C1:${step.message}`
  return finalizeEvent({
    ...common,
    channel: step.channel,
    tenant,
    messageKey,
    deliveryKey: `Ev${randomBytes(4).toString('hex')}`,
    sender: { externalId: `U${step.sender}`, displayName: `User ${step.sender}` },
  })
}

/** Ids replaced by the order of their first appearance, per kind of id. */
function normalizer() {
  const seen = new Map<string, string>()
  const label = (kind: string, id: string | null) => {
    if (id === null) return null
    const key = `${kind}:${id}`
    if (!seen.has(key))
      seen.set(key, `${kind}#${[...seen.keys()].filter((k) => k.startsWith(`${kind}:`)).length}`)
    return seen.get(key)
  }
  return (result: IngestResult | Error) => {
    if (result instanceof Error) return { error: result.name }
    return {
      outcome: result.outcome,
      duplicate: result.duplicate,
      payloadMismatch: result.payloadMismatch ?? false,
      message: label('message', result.messageId),
      conversation: label('conversation', result.conversationId),
      customer: label('customer', result.customerId),
    }
  }
}

/**
 * The rows a run left: its messages, their edit histories and what they hang off, ids normalized
 * the same way.
 */
async function rowsOf(db: Database, run: string) {
  const rows = await db.query<Record<string, unknown>>(
    `SELECT m.channel, m.channel_message_id, m.body, m.subject, m.edited_at, m.edit_seq,
            m.deleted_at, m.restored_at, m.payload_hash, m.conversation_id::text AS conversation,
            c.customer_id::text AS customer, c.subject AS conversation_subject,
            (SELECT count(*)::int FROM outbox o WHERE o.message_id = m.id) AS outbox,
            (SELECT coalesce(jsonb_agg(jsonb_build_array(e.body, e.edited_at, e.edit_seq,
                       e.applied, e.delivery_key, e.payload_hash)
                     ORDER BY e.edited_at, e.edit_seq NULLS FIRST), '[]')
               FROM message_edits e WHERE e.message_id = m.id) AS edits
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
       JOIN customers cu ON cu.id = c.customer_id
      WHERE cu.tenant IN ($1, $2)
      ORDER BY m.channel, m.channel_message_id`,
    [`T${run}`, `support-${run}@example.com`],
  )
  const tombstones = await db.query<Record<string, unknown>>(
    `SELECT channel, channel_message_id, deleted_at, restored_at FROM message_tombstones
      WHERE channel_message_id LIKE $1 OR channel_message_id LIKE $2
      ORDER BY channel, channel_message_id`,
    [`T${run}:%`, `support-${run}@%`],
  )
  const seen = new Map<string, number>()
  const label = (v: unknown) => {
    const k = String(v)
    if (!seen.has(k)) seen.set(k, seen.size)
    return seen.get(k)
  }
  return {
    messages: rows.map((r) => ({
      ...r,
      conversation: label(`cv${r.conversation}`),
      customer: label(`cu${r.customer}`),
    })),
    tombstones,
  }
}

describe('a batch answers each event as single ingest does', () => {
  it('random event sets: same answers, same rows', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(stepArb, { minLength: 1, maxLength: 12 }), {
          minLength: 1,
          maxLength: 3,
        }),
        async (batches) => {
          const run = randomBytes(5).toString('hex')
          const events = await Promise.all(
            batches.map((b) => Promise.all(b.map((s) => eventOf(s, run)))),
          )
          const one = normalizer()
          const many = normalizer()
          const counted = countingStatements(batched.db)
          const alone: unknown[] = []
          const together: unknown[] = []
          for (const batch of events) {
            for (const event of batch) alone.push(one(await ingestEvent(single.db, event)))
            const before = counted.statements
            for (const result of await ingestEvents(counted.db, batch)) together.push(many(result))
            // One round trip, no event left to the single path (which would hide a difference).
            expect(counted.statements - before).toBe(1)
          }
          expect(together).toEqual(alone)
          expect(await rowsOf(batched.db, run)).toEqual(await rowsOf(single.db, run))
        },
      ),
      { numRuns: 40 },
    )
  }, 240_000)
})

describe('a batch under trouble', () => {
  const slack = (run: string, n: number, sender: number, body = `text ${n}`) =>
    finalizeEvent({
      kind: 'message',
      channel: 'slack',
      tenant: `T${run}`,
      messageKey: `T${run}:C1:${n}`,
      deliveryKey: `Ev${run}${n}`,
      sender: { externalId: `U${sender}` },
      body,
      occurredAt: new Date().toISOString(),
    })

  it('batches with the same new senders in opposite orders, at once: no deadlock, one row each', async () => {
    const run = randomBytes(5).toString('hex')
    const forward = await Promise.all([0, 1, 2, 3, 4, 5].map((n) => slack(run, n, n)))
    const backward = await Promise.all([5, 4, 3, 2, 1, 0].map((n) => slack(run, n + 10, n)))
    const counted = countingStatements(batched.db)
    const answers = await Promise.all(
      [forward, backward, forward, backward].map((batch) => ingestEvents(counted.db, batch)),
    )
    expect(counted.statements).toBe(4)
    expect(answers.flat().every((a) => !(a instanceof Error))).toBe(true)
    const rows = await batched.db.query<{ n: number; customers: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT c.customer_id)::int AS customers
         FROM messages m JOIN conversations c ON c.id = m.conversation_id
        WHERE m.channel_message_id LIKE $1`,
      [`T${run}:%`],
    )
    expect(rows[0]).toEqual({ n: 12, customers: 6 })
  })

  it('one event the database refuses fails alone; the rest of its batch lands', async () => {
    const run = randomBytes(5).toString('hex')
    await batched.db.query(`
      CREATE FUNCTION test_poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.body = 'poison' THEN RAISE EXCEPTION 'poisoned'; END IF; RETURN NEW; END $$`)
    await batched.db.query(`CREATE TRIGGER test_poison BEFORE INSERT ON messages
      FOR EACH ROW EXECUTE FUNCTION test_poison()`)
    try {
      const batch = [
        await slack(run, 1, 1),
        await slack(run, 2, 1, 'poison'),
        await slack(run, 3, 1),
      ]
      const answers = await ingestEvents(batched.db, batch)
      expect(answers.map((a) => (a instanceof Error ? 'error' : a.outcome))).toEqual([
        'created',
        'error',
        'created',
      ])
    } finally {
      await batched.db.query('DROP TRIGGER test_poison ON messages; DROP FUNCTION test_poison()')
    }
  })

  it('the batch statement failing as a whole: each event is ingested on its own', async () => {
    const run = randomBytes(5).toString('hex')
    const first = await slack(run, 1, 1)
    const batch = [first, await slack(run, 2, 2), first]
    await batched.db.query('ALTER FUNCTION ingest_events(jsonb) RENAME TO test_ingest_events_off')
    try {
      const answers = await ingestEvents(batched.db, batch)
      expect(answers.map((a) => (a instanceof Error ? 'error' : a.outcome))).toEqual([
        'created',
        'created',
        'duplicate',
      ])
    } finally {
      await batched.db.query('ALTER FUNCTION test_ingest_events_off(jsonb) RENAME TO ingest_events')
    }
  })
})
