/**
 * The replay service (origin/failures/replay-service.ts) answers each replay as a typed outcome,
 * printing nothing: replayed (which path, which ids), already resolved, not found, refused with a
 * stable code (nothing written), failed with one (the row not resolved). Real Postgres, a real
 * HTTP downstream; the CLI's and the console's wording of the same outcomes:
 * test/origin/outbox/outbox-relay.test.ts, test/origin/failures/inbound.pg.test.ts,
 * test/origin/console/console.pg.test.ts.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keptBody, UNRECOGNIZED_KIND } from '../../../contract/unrecognized-event'
import type { Database } from '../../../origin/db'
import { recordInboundFailure } from '../../../origin/failures/inbound'
import { NO_GMAIL } from '../../../origin/failures/replay-inbound'
import type { FailureReplay } from '../../../origin/failures/replay-outcome'
import {
  NO_DOWNSTREAM,
  type ReplayServiceDeps,
  replayAllDead,
  replayFailure,
} from '../../../origin/failures/replay-service'
import { auditResult, describeReplay } from '../../../origin/failures/replay-text'
import { recordDownstreamFailure } from '../../../origin/failures/store'
import { NO_GATEWAY } from '../../../origin/failures/unrecognized'
import { ingestEvent } from '../../../origin/ingest'
import { OUTBOX_COLUMNS, type OutboxRowRecord, toOutboxRow } from '../../../origin/outbox/store'
import { eventFixture, openTestDb } from '../../support/origin'
import { openSqlTestbed, type SqlTestbed } from '../../support/sql-testbed'

let tb: SqlTestbed
let db: Database
let downstream: Server
let downstreamUrl: string
/** What the downstream answers next. */
let downstreamStatus = 500
const handedKeys: string[] = []

beforeAll(async () => {
  tb = await openSqlTestbed()
  db = openTestDb(tb.database.url)
  downstream = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      handedKeys.push(String(req.headers['idempotency-key']))
      res.writeHead(downstreamStatus).end()
    })
  })
  await new Promise<void>((resolve) => downstream.listen(0, '127.0.0.1', resolve))
  downstreamUrl = `http://127.0.0.1:${(downstream.address() as AddressInfo).port}/items`
}, 60_000)

afterAll(async () => {
  await db?.close()
  await tb?.close()
  await new Promise((resolve) => downstream?.close(resolve))
})

function deps(overrides: Partial<ReplayServiceDeps> = {}): ReplayServiceDeps {
  return {
    db,
    downstream: { url: downstreamUrl, timeoutMs: 2_000 },
    retry: { maxAttempts: 3, baseMs: 10, maxMs: 10 },
    gmail: null,
    env: {},
    claims: null,
    gateway: null,
    ...overrides,
  }
}

/** A dead letter of the queue; its event as given (null: none kept). */
async function deadQueued(event?: unknown): Promise<{ id: string; deliveryKey: string }> {
  const fixture = await eventFixture({ deliveryKey: `dedup:slack:A1:Ev${crypto.randomUUID()}` })
  const stored = event === undefined ? fixture : event
  const deliveryKey =
    (stored as { deliveryKey?: string } | null)?.deliveryKey ?? fixture.deliveryKey
  const id = await recordInboundFailure(db, {
    channel: 'slack',
    deliveryKey,
    source: 'queue',
    event: stored,
    error: 'origin 503 after 20 attempts',
    attempts: 20,
  })
  return { id, deliveryKey }
}

/** A stored message whose first hand-off failed: its failure row (attempts 1) and outbox id. */
async function failedHandOff(
  status: 'pending' | 'dead',
): Promise<{ id: string; outboxId: string }> {
  const event = await eventFixture({ deliveryKey: `dedup:slack:A1:Ev${crypto.randomUUID()}` })
  const { messageId } = await ingestEvent(db, event)
  const [record] = await db.query<OutboxRowRecord>(
    `SELECT ${OUTBOX_COLUMNS} FROM outbox o WHERE o.message_id = $1`,
    [messageId],
  )
  const row = toOutboxRow(record as OutboxRowRecord)
  const id = await recordDownstreamFailure(db, row, 'downstream answered HTTP 500', status, 60_000)
  return { id: id as string, outboxId: row.id }
}

const statusOf = async (id: string) =>
  (
    await tb.sql.query<{ status: string }>('SELECT status FROM channel_failures WHERE id = $1', [
      id,
    ])
  ).rows[0]?.status

describe('replayFailure', () => {
  it('a dead queue row: replayed through the ingest, with its message; again: already resolved', async () => {
    const { id, deliveryKey } = await deadQueued()
    const first = await replayFailure(deps(), id)
    expect(first).toEqual({
      status: 'replayed',
      failureId: id,
      replayed: {
        path: 'ingest',
        deliveryKey,
        ingested: 'created',
        messageId: expect.stringMatching(/^\d+$/),
        byAnother: false,
      },
    })
    expect(await statusOf(id)).toBe('resolved')
    expect(await replayFailure(deps(), id)).toEqual({ status: 'already_resolved', failureId: id })
    expect(describeReplay(first)).toMatch(`${deliveryKey} ingested (created, message `)
    expect(auditResult(first)).toMatch(new RegExp(`^ok: failure ${id}: `))
  })

  it('an unknown id: not found', async () => {
    expect(await replayFailure(deps(), '987654321')).toEqual({
      status: 'not_found',
      failureId: '987654321',
    })
  })

  it('refusals carry a stable code and write nothing', async () => {
    const noEvent = await deadQueued(null)
    expect(await replayFailure(deps(), noEvent.id)).toEqual({
      status: 'refused',
      failureId: noEvent.id,
      refusal: { code: 'not_replayable', reason: 'no event was kept for it' },
    })

    const deliveryKey = `dedup:unrecognized:line:-:h${crypto.randomUUID().replaceAll('-', '')}`
    const kept = await deadQueued({
      ...{ v: 1, kind: UNRECOGNIZED_KIND, channel: 'line', deliveryKey, reason: 'line_type_x' },
      ...{ tenant: null, path: '/webhooks/line', contentType: 'application/json' },
      ...keptBody('{"destination":"U1","events":[{"type":"x"}]}'),
      receivedAt: Date.now(),
    })
    expect(await replayFailure(deps(), kept.id)).toMatchObject({
      status: 'refused',
      refusal: { code: 'not_configured', missing: NO_GATEWAY },
    })

    const gmail = await recordInboundFailure(db, {
      channel: 'email',
      deliveryKey: `gmail:ops@example.com:${crypto.randomUUID()}`,
      source: 'gmail',
      sourceRef: 'g-1',
      event: null,
      error: 'no_raw',
      attempts: 1,
    })
    expect(await replayFailure(deps(), gmail)).toMatchObject({
      status: 'refused',
      refusal: { code: 'not_configured', missing: NO_GMAIL },
    })

    const handOff = await failedHandOff('dead')
    expect(await replayFailure(deps({ downstream: null }), handOff.id)).toMatchObject({
      status: 'refused',
      refusal: { code: 'not_configured', missing: NO_DOWNSTREAM },
    })

    const pending = await failedHandOff('pending')
    expect(await replayFailure(deps(), pending.id)).toMatchObject({
      status: 'refused',
      refusal: { code: 'pending', attempt: 2, maxAttempts: 3 },
    })

    const other = await tb.insert(
      `INSERT INTO channel_failures (channel, stage, error, status) VALUES ('slack', 'archive', 'x', 'dead')`,
      [],
    )
    expect(await replayFailure(deps(), other)).toMatchObject({
      status: 'refused',
      refusal: { code: 'stage_not_replayed', stage: 'archive' },
    })
    for (const id of [noEvent.id, kept.id, gmail, handOff.id, other]) {
      expect(await statusOf(id)).toBe('dead')
    }
    expect(await statusOf(pending.id)).toBe('pending')
    expect(handedKeys).toEqual([])
  })

  it('a dead hand-off: failed again (pending, then dead after its attempts), then handed off under its key', async () => {
    const { id, outboxId } = await failedHandOff('dead')
    downstreamStatus = 500
    const again = await replayFailure(
      deps({ retry: { maxAttempts: 5, baseMs: 10, maxMs: 10 } }),
      id,
    )
    expect(again).toEqual({
      status: 'failed',
      failureId: id,
      failure: {
        code: 'handoff_failed',
        error: expect.any(String),
        attempts: 2,
        retryInMs: expect.any(Number),
      },
    })
    expect(await statusOf(id)).toBe('pending')
    await tb.sql.query(`UPDATE channel_failures SET status = 'dead' WHERE id = $1`, [id])

    const exhausted = await replayFailure(deps(), id)
    expect(exhausted).toMatchObject({
      status: 'failed',
      failure: { code: 'handoff_failed', attempts: 3, retryInMs: null },
    })
    expect(describeReplay(exhausted)).toMatch(/; dead after 3 attempts$/)
    expect(await statusOf(id)).toBe('dead')

    downstreamStatus = 200
    expect(await replayFailure(deps(), id)).toEqual({
      status: 'replayed',
      failureId: id,
      replayed: { path: 'downstream', outboxId, handedOff: true, byAnother: false },
    })
    expect(handedKeys).toEqual(Array(3).fill(`outbox-${outboxId}`))
    expect(await statusOf(id)).toBe('resolved')
    handedKeys.length = 0
  })
})

describe('replayAllDead', () => {
  it('every dead row, one outcome each as it is replayed; a second run takes what is still dead', async () => {
    const rows = [await deadQueued(), await deadQueued()]
    const outcomes: FailureReplay[] = []
    for await (const outcome of replayAllDead(deps({ downstream: null }))) outcomes.push(outcome)
    for (const { id } of rows) {
      expect(outcomes.find((o) => o.failureId === id)).toMatchObject({
        status: 'replayed',
        replayed: { path: 'ingest', ingested: 'created' },
      })
    }
    const stillDead = (
      await tb.sql.query<{ id: string }>(
        `SELECT id::text FROM channel_failures
        WHERE status = 'dead' AND stage IN ('inbound', 'downstream') ORDER BY id`,
      )
    ).rows.map((r) => r.id)
    const again: string[] = []
    for await (const outcome of replayAllDead(deps({ downstream: null }))) {
      expect(outcome.status).toBe('refused')
      again.push(outcome.failureId)
    }
    expect(again).toEqual(stillDead)
  })
})
