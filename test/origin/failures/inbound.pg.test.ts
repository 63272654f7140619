/**
 * Inbound failures at the origin, against real Postgres: the dead-letter report endpoint
 * (`POST /v1/failures/inbound`, signed like every forward) and `npm run failures` replaying what it
 * recorded through the live ingest path: once, however often it is reported or replayed.
 */
import { describe, expect, it } from 'vitest'
import { secretList } from '../../../shared/crypto'
import { fileTestbed } from '../../support/for-file'
import { eventFixture, runFailuresCli, signedPost } from '../../support/origin'

const tb = fileTestbed()

function reportDead(body: unknown, secret = secretList(tb.secret)[0] as string) {
  return signedPost(`${tb.origin.url}/v1/failures/inbound`, JSON.stringify(body), secret)
}

const cli = (args: string[]) => runFailuresCli(tb, args, { DOWNSTREAM_URL: '' })

describe('POST /v1/failures/inbound', () => {
  it('records a dead event once per delivery key, with its error and attempts', async () => {
    const event = await eventFixture()
    const report = {
      channel: event.channel,
      deliveryKey: event.deliveryKey,
      event,
      error: 'origin 500 after 5 attempts',
      attempts: 5,
    }
    const first = await reportDead(report)
    expect(first.status).toBe(201)
    // The consumer's own retry (its answer was lost) updates the row, never adds one.
    const again = await reportDead({ ...report, error: 'origin 502', attempts: 6 })
    expect(again.status).toBe(201)
    const { failureId } = (await again.json()) as { failureId: string }
    expect(failureId).toBe(((await first.json()) as { failureId: string }).failureId)

    const { rows } = await tb.sql.query(
      `SELECT stage, source, status, attempts, error, event->>'deliveryKey' AS key
         FROM channel_failures WHERE delivery_key = $1`,
      [event.deliveryKey],
    )
    expect(rows).toEqual([
      {
        stage: 'inbound',
        source: 'queue',
        status: 'dead',
        attempts: 6,
        error: 'origin 502',
        key: event.deliveryKey,
      },
    ])
    expect(await tb.count('messages', 'channel_message_id = $1', [event.messageKey])).toBe(0)
  })

  it('records a dead event whose strings the database cannot hold, made storable; its replay stores it', async () => {
    const event = await eventFixture()
    const dirty = {
      ...event,
      body: 'a\u0000b\ud800c',
      attachments: [{ kind: 'document', fileName: 'x\ud800.pdf', content: { 'k\u0000': 'v' } }],
    }
    const report = {
      channel: event.channel,
      deliveryKey: event.deliveryKey,
      event: dirty,
      error: 'origin 400: invalid_event \ud800',
      attempts: 3,
    }
    const answer = await reportDead(report)
    expect(answer.status).toBe(201)
    const { failureId } = (await answer.json()) as { failureId: string }
    expect((await cli(['replay', failureId])).code).toBe(0)
    const { rows } = await tb.sql.query(
      'SELECT body, attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
      [event.channel, event.messageKey],
    )
    expect(rows).toEqual([
      {
        body: 'ab\ufffdc',
        attachments: [{ kind: 'document', fileName: 'x\ufffd.pdf', content: { k: 'v' } }],
      },
    ])
  })

  it('writes nothing for an unsigned, wrongly signed or malformed report', async () => {
    const event = await eventFixture()
    const report = {
      channel: 'slack',
      deliveryKey: event.deliveryKey,
      event,
      error: 'x',
      attempts: 1,
    }
    const unsigned = await fetch(`${tb.origin.url}/v1/failures/inbound`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(report),
    })
    expect(unsigned.status).toBe(401)
    expect((await reportDead(report, 'not-the-secret')).status).toBe(401)
    const malformed = await reportDead({ ...report, attempts: 'many' })
    expect(malformed.status).toBe(400)
    expect(await tb.count('channel_failures', 'delivery_key = $1', [event.deliveryKey])).toBe(0)
  })
})

describe('npm run failures -- replay (inbound)', () => {
  it('lists a dead event, replays it into one row, and a second replay changes nothing', async () => {
    const event = await eventFixture({ body: 'refused by a proxy for a while' })
    const report = {
      channel: event.channel,
      deliveryKey: event.deliveryKey,
      event,
      error: 'origin 403 forbidden',
      attempts: 4,
    }
    await reportDead(report)
    const { rows } = await tb.sql.query<{ id: string }>(
      'SELECT id FROM channel_failures WHERE delivery_key = $1',
      [event.deliveryKey],
    )
    const id = String(rows[0]?.id)

    const listed = await cli(['list', '--status', 'dead'])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain('inbound/queue')
    expect(listed.stdout).toContain(event.deliveryKey)

    const replayed = await cli(['replay', id])
    expect(replayed).toMatchObject({ code: 0 })
    expect(replayed.stdout).toContain(`failure ${id}: ${event.deliveryKey} ingested (created`)
    expect(await tb.count('messages', 'channel_message_id = $1', [event.messageKey])).toBe(1)
    expect(await tb.count('outbox')).toBeGreaterThanOrEqual(1)

    const twice = await cli(['replay', id])
    expect(twice.code).toBe(0)
    expect(twice.stdout).toContain('already resolved')
    expect(await tb.count('messages', 'channel_message_id = $1', [event.messageKey])).toBe(1)

    // The same dead letter reported again (the consumer's retry after a lost answer): still resolved.
    await reportDead(report)
    expect(await tb.count('channel_failures', "id = $1 AND status = 'resolved'", [id])).toBe(1)
  })

  it('a dead letter kept as a draft (by a gateway before 2026-12-02) replays into one row', async () => {
    // A batch item the schema refused was kept as its draft: no `v`, no payload hash.
    const { v: _, payloadHash: __, ...draft } = await eventFixture()
    await reportDead({
      channel: draft.channel,
      deliveryKey: draft.deliveryKey,
      event: draft,
      error: 'invalid event: occurredAt: iso_timestamp',
      attempts: 1,
    })
    const { rows } = await tb.sql.query<{ id: string }>(
      'SELECT id FROM channel_failures WHERE delivery_key = $1',
      [draft.deliveryKey],
    )
    const id = String(rows[0]?.id)
    expect(await cli(['replay', id])).toMatchObject({ code: 0 })
    expect(await cli(['replay', id])).toMatchObject({ code: 0 })
    expect(await tb.count('messages', 'channel_message_id = $1', [draft.messageKey])).toBe(1)
  })

  it('replay --all-dead stores an event that had landed meanwhile once (a duplicate)', async () => {
    const event = await eventFixture()
    await reportDead({
      channel: event.channel,
      deliveryKey: event.deliveryKey,
      event,
      error: 'timeout',
      attempts: 3,
    })
    // The vendor's own retry got through after the queue gave up.
    expect((await tb.post(event)).status).toBe(201)
    const all = await cli(['replay', '--all-dead'])
    expect(all.code).toBe(0)
    expect(all.stdout).toContain('ingested (duplicate')
    expect(await tb.count('messages', 'channel_message_id = $1', [event.messageKey])).toBe(1)
    expect(await tb.count('channel_failures', "stage = 'inbound' AND status = 'dead'")).toBe(0)
  })
})
