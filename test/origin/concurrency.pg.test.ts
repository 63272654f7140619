/**
 * Concurrency against real Postgres through the Neon driver and the local proxy: many deliveries of
 * one message, in one origin process and across two, and two first messages from a new customer.
 * Postgres decides every race; each test checks the rows, not only the answers.
 */
import { describe, expect, it } from 'vitest'
import type { InboundEvent, IngestResult } from '../../contract/event'
import { type OriginHandle, startOrigin } from '../../local/origin-process'
import type { ExitInfo } from '../../local/processes'
import { fileTestbed } from '../support/for-file'
import { eventFixture, signedPost, TEST_DATABASE_DRIVER } from '../support/origin'

const DELIVERIES = 50

const bed = fileTestbed({ config: { dbConnectTimeoutMs: 5000, originTimeoutMs: 10_000 } })

/**
 * These tests are about races, not budgets: 50 requests at once on a pool of 10, on a shared
 * two-core machine, may wait longer for a connection than the production bound (1 s), and a 503
 * there would say nothing about the race. The pool-wait bound has its own test
 * (test/origin/db/db-faults.test.ts).
 */
const RACE_POOL_WAIT = { ORIGIN_TIMEOUT_MS: '10000', DB_CONNECT_TIMEOUT_MS: '5000' }

async function deliverAll(urls: string[], event: InboundEvent) {
  return Promise.all(
    Array.from({ length: DELIVERIES }, async (_, i) => {
      const res = await signedPost(urls[i % urls.length] as string, event, bed.secret)
      return { status: res.status, body: (await res.json()) as IngestResult }
    }),
  )
}

function expectOneWinner(answers: { status: number; body: IngestResult }[]) {
  for (const { status } of answers) expect([200, 201]).toContain(status)
  expect(answers.filter((a) => a.status === 201)).toHaveLength(1)
  const ids = new Set(answers.map((a) => a.body.messageId))
  expect(ids.size).toBe(1)
  expect([...ids][0]).toMatch(/^\d+$/)
  const conversations = new Set(answers.map((a) => a.body.conversationId))
  expect(conversations.size).toBe(1)
  for (const { status, body } of answers) {
    expect(body.outcome).toBe(status === 201 ? 'created' : 'duplicate')
    expect(body.duplicate).toBe(status !== 201)
  }
}

async function expectStoredOnce(event: InboundEvent) {
  const key = [event.channel, event.messageKey]
  expect(await bed.count('messages', 'channel = $1 AND channel_message_id = $2', key)).toBe(1)
  const outbox = await bed.sql.query(
    `SELECT o.topic, o.payload FROM outbox o JOIN messages m ON m.id = o.message_id
      WHERE m.channel = $1 AND m.channel_message_id = $2`,
    key,
  )
  expect(outbox.rows).toHaveLength(1)
  expect(outbox.rows[0].topic).toBe('message.created')
  expect(JSON.stringify(outbox.rows[0].payload)).not.toContain(event.body)
  // The losers rolled back: no second customer or conversation for this sender.
  const sender = [event.channel, event.tenant, event.sender.externalId]
  expect(
    await bed.count('customers', 'channel = $1 AND tenant = $2 AND external_id = $3', sender),
  ).toBe(1)
  expect(
    await bed.count(
      'conversations c JOIN customers u ON u.id = c.customer_id',
      'u.channel = $1 AND u.tenant = $2 AND u.external_id = $3',
      sender,
    ),
  ).toBe(1)
}

describe('many deliveries of one message', () => {
  it(`${DELIVERIES} concurrent deliveries to one origin make one row and one outbox item`, async () => {
    const event = await eventFixture({ sender: { externalId: 'U-conc-1' } })
    const answers = await deliverAll([bed.origin.url], event)
    expectOneWinner(answers)
    await expectStoredOnce(event)
  })

  it('the same across two origin processes on one database', async () => {
    const env = {
      DATABASE_URL: bed.databaseUrl,
      NEON_WS_PROXY: bed.wsProxy,
      DATABASE_DRIVER: TEST_DATABASE_DRIVER,
      ORIGIN_SHARED_SECRET: bed.secret,
      LOG_LEVEL: 'warn',
      ...RACE_POOL_WAIT,
    }
    const pods: OriginHandle[] = []
    let exits: ExitInfo[] = []
    try {
      pods.push(...(await Promise.all([startOrigin({ env }), startOrigin({ env })])))
      expect(pods[0]?.pid).not.toBe(pods[1]?.pid)
      const event = await eventFixture({
        channel: 'whatsapp',
        sender: { externalId: 'whatsapp:+15550001' },
      })
      const answers = await deliverAll(
        pods.map((p) => p.url),
        event,
      )
      expectOneWinner(answers)
      await expectStoredOnce(event)
    } finally {
      exits = await Promise.all(pods.map((p) => p.kill('SIGTERM')))
    }
    // SIGTERM is a clean exit, not a crash.
    expect(exits.map((e) => e.code)).toEqual([0, 0])
  })
})

describe('a new customer', () => {
  it('two different first messages at once make one customer and one pending conversation', async () => {
    const sender = { externalId: 'U-new-pair', displayName: 'Ada' }
    const [first, second] = await Promise.all([
      eventFixture({ sender, body: 'first' }),
      eventFixture({ sender, body: 'second' }),
    ])
    const answers = await Promise.all([
      bed.post(first as InboundEvent),
      bed.post(second as InboundEvent),
    ])
    for (const answer of answers) expect(answer.status).toBe(201)
    expect(answers[0]?.body.messageId).not.toBe(answers[1]?.body.messageId)
    expect(answers[0]?.body.conversationId).toBe(answers[1]?.body.conversationId)
    expect(answers[0]?.body.customerId).toBe(answers[1]?.body.customerId)

    const customers = await bed.sql.query(
      'SELECT id, display_name FROM customers WHERE external_id = $1',
      [sender.externalId],
    )
    expect(customers.rows).toEqual([{ id: answers[0]?.body.customerId, display_name: 'Ada' }])
    expect(
      await bed.count('conversations', "customer_id = $1 AND status = 'pending'", [
        customers.rows[0].id,
      ]),
    ).toBe(1)
    expect(
      await bed.count('messages', 'conversation_id = $1', [answers[0]?.body.conversationId]),
    ).toBe(2)
    expect(
      await bed.count('outbox', 'message_id = ANY($1::bigint[])', [
        answers.map((a) => a.body.messageId),
      ]),
    ).toBe(2)
  })
})
