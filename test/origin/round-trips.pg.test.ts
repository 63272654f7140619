/**
 * A new message is one database round trip (issue 14): `ingest_message()` looks the key up and
 * writes customer, conversation, message and outbox row in one statement, so a replay is one
 * statement too. Counted at the origin's own database interface, on the real database.
 */
import { afterAll, beforeAll, expect, it } from 'vitest'
import type { InboundEvent } from '../../contract/event'
import { createDatabase, type Database } from '../../origin/db'
import { ingestEvent } from '../../origin/ingest'
import { silentLogger } from '../../origin/log'
import {
  eventFixture,
  type OriginTestbed,
  startOriginTestbed,
  TEST_DATABASE_DRIVER,
} from '../support/origin'

let bed: OriginTestbed
let db: Database

beforeAll(async () => {
  bed = await startOriginTestbed()
  db = createDatabase({
    databaseUrl: bed.databaseUrl,
    neonWsProxy: bed.wsProxy,
    driver: TEST_DATABASE_DRIVER,
    poolMax: 2,
    connectTimeoutMs: 5000,
    queryTimeoutMs: 5000,
    logger: silentLogger,
  })
})

afterAll(async () => {
  await db?.close()
  await bed?.close()
})

/** Ingests `event`, counting the statements and transactions it took. */
async function roundTrips(event: InboundEvent): Promise<{ outcome: string; statements: number }> {
  let statements = 0
  const counting: Database = {
    ...db,
    query: (text, values, options) => {
      statements++
      return db.query(text, values, options)
    },
    transaction: () => {
      throw new Error('a transaction costs BEGIN and COMMIT round trips of its own')
    },
  }
  const result = await ingestEvent(counting, event)
  return { outcome: result.outcome, statements }
}

it('a new message from a new sender is one statement; its replay is one statement', async () => {
  const event = await eventFixture({ sender: { externalId: 'U-round-trip', displayName: 'Ada' } })
  expect(await roundTrips(event)).toEqual({ outcome: 'created', statements: 1 })
  expect(await roundTrips(event)).toEqual({ outcome: 'duplicate', statements: 1 })
  const second = await eventFixture({ sender: { externalId: 'U-round-trip' } })
  expect(await roundTrips(second)).toEqual({ outcome: 'created', statements: 1 })
})

it('an email reply naming its thread is one statement', async () => {
  const mailbox = 'support@inbound.example'
  const email = (id: string, references?: string[]) =>
    eventFixture({
      channel: 'email',
      tenant: mailbox,
      messageKey: `${mailbox}:<${id}@mail.example>`,
      sender: { externalId: 'ada@customer.example' },
      subject: 'Order 1234',
      ...(references ? { references } : {}),
    })
  expect(await roundTrips(await email('rt-first'))).toEqual({ outcome: 'created', statements: 1 })
  const reply = await email('rt-reply', [`${mailbox}:<rt-first@mail.example>`])
  expect(await roundTrips(reply)).toEqual({ outcome: 'created', statements: 1 })
})
