/**
 * A message's edits, in order (issue 21; migrations/20261202008001_message_edits.sql): every edit
 * the origin takes is one `message_edits` row, the late one too (not applied: the row keeps the
 * newer text), a replay none, through `POST /v1/events` and `POST /v1/events/batch` alike, and
 * only on the row of the event's own tenant.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { InboundEvent, IngestResult } from '../../contract/event'
import { secretList } from '../../shared/crypto'
import { fileTestbed } from '../support/for-file'
import { type EventOverrides, eventFixture, signedPost } from '../support/origin'

const bed = fileTestbed()

const at = (minute: number, second = 0) =>
  new Date(Date.UTC(2026, 11, 1, 9, minute, second)).toISOString()

/** The edit of `original` made at `occurredAt`, setting `body`, with a delivery of its own. */
function editOf(
  original: InboundEvent,
  body: string,
  occurredAt: string,
  overrides: EventOverrides = {},
): Promise<InboundEvent> {
  return eventFixture({
    ...original,
    kind: 'edit',
    body,
    occurredAt,
    deliveryKey: `Ev${randomBytes(6).toString('hex')}`,
    ...overrides,
  })
}

/** POST /v1/events/batch: one answer per event, in order. */
async function postBatch(events: InboundEvent[]): Promise<IngestResult[]> {
  const res = await signedPost(
    `${bed.origin.url}/v1/events/batch`,
    JSON.stringify({ events }),
    secretList(bed.secret)[0] as string,
  )
  expect(res.status).toBe(200)
  return ((await res.json()) as { results: IngestResult[] }).results
}

/** POST /v1/events, one event after the other. */
async function postEach(events: InboundEvent[]): Promise<IngestResult[]> {
  const answers: IngestResult[] = []
  for (const event of events) answers.push((await bed.post(event)).body)
  return answers
}

/** Each event in a batch of its own, one after the other. */
async function postBatchEach(events: InboundEvent[]): Promise<IngestResult[]> {
  const answers: IngestResult[] = []
  for (const event of events) answers.push(...(await postBatch([event])))
  return answers
}

interface HistoryRow {
  id: string
  body: string
  edited_at: Date
  edit_seq: string | null
  applied: boolean
  delivery_key: string
  payload_hash: string
}

/** The message row of `event`'s key, and its history as the lookup reads it (oldest first). */
async function stored(event: InboundEvent) {
  const { rows: messages } = await bed.sql.query<{ id: string; body: string }>(
    `SELECT id::text, body FROM messages WHERE channel = $1 AND channel_message_id = $2`,
    [event.channel, event.messageKey],
  )
  const { rows: history } = await bed.sql.query<HistoryRow>(
    `SELECT m.id::text, e.body, e.edited_at, e.edit_seq::text, e.applied, e.delivery_key,
            e.payload_hash
       FROM message_edits e JOIN messages m ON m.id = e.message_id
      WHERE m.channel = $1 AND m.channel_message_id = $2
      ORDER BY e.edited_at, e.edit_seq NULLS FIRST`,
    [event.channel, event.messageKey],
  )
  return { ids: messages.map((m) => m.id), bodies: messages.map((m) => m.body), history }
}

const summary = (rows: HistoryRow[]) =>
  rows.map((r) => [r.body, r.edited_at.toISOString(), r.applied])

/** A message (v1) and two edits of it: v3 at minute 2, and v2 at minute 1, to arrive late. */
async function twoEdits() {
  const original = await eventFixture({ body: 'v1', occurredAt: at(0) })
  const newer = await editOf(original, 'v3', at(2))
  const older = await editOf(original, 'v2', at(1))
  return { original, newer, older }
}

/** The row holds v3, and its history both edits in order, the late v2 not applied. */
async function expectNewestWithLateHistory(original: InboundEvent) {
  const { bodies, history } = await stored(original)
  expect(bodies).toEqual(['v3'])
  expect(summary(history)).toEqual([
    ['v2', at(1), false],
    ['v3', at(2), true],
  ])
  return history
}

describe.each([
  ['one by one (POST /v1/events)', postEach],
  ['in one batch (POST /v1/events/batch)', postBatch],
  ['one event per batch', postBatchEach],
])('%s', (_name, send) => {
  it('two edits out of order and a replay of each: two history rows, in order; the row shows the newest', async () => {
    const { original, newer, older } = await twoEdits()
    const answers = await send([original, newer, older, newer, older])
    expect(answers.map((a) => a.outcome)).toEqual([
      'created',
      'updated',
      'duplicate',
      'duplicate',
      'duplicate',
    ])
    const history = await expectNewestWithLateHistory(original)
    expect(history.map((h) => [h.delivery_key, h.payload_hash])).toEqual([
      [older.deliveryKey, older.payloadHash],
      [newer.deliveryKey, newer.payloadHash],
    ])
  })

  it('an edit of a message never seen starts its history; the late original adds none', async () => {
    const { original, newer, older } = await twoEdits()
    const answers = await send([newer, older, original, newer])
    expect(answers.map((a) => a.outcome)).toEqual([
      'created',
      'duplicate',
      'duplicate',
      'duplicate',
    ])
    await expectNewestWithLateHistory(original)
  })
})

describe('edits at once', () => {
  it.each([
    ['of a stored message', true],
    ['of a message never seen', false],
  ])(
    '%s: every edit once, the newest on the row and applied, however they interleave',
    async (_name, withOriginal) => {
      const original = await eventFixture({ body: 'v0', occurredAt: at(0) })
      if (withOriginal) expect((await bed.post(original)).status).toBe(201)
      const edits = await Promise.all(
        [1, 2, 3, 4, 5, 6].map((minute) => editOf(original, `v${minute}`, at(minute))),
      )
      // Each edit twice, one copy by itself and one in a batch, all at once.
      const answers = await Promise.all([
        ...edits.map((edit) => bed.post(edit).then((res) => res.status)),
        postBatch([...edits].reverse()).then((results) => (results.length === 6 ? 200 : 500)),
      ])
      expect(answers.every((status) => status < 300)).toBe(true)
      const { bodies, history } = await stored(original)
      expect(bodies).toEqual(['v6'])
      expect(history.map((h) => h.body)).toEqual(['v1', 'v2', 'v3', 'v4', 'v5', 'v6'])
      expect(history.at(-1)?.applied).toBe(true)
    },
  )
})

describe('which edits are the same edit', () => {
  it('same-second edits are ordered by sequence, one without a sequence first', async () => {
    const original = await eventFixture({ channel: 'telegram', body: 'v1', occurredAt: at(0) })
    const second = at(1)
    const noSeq = await editOf(original, 'no sequence', second)
    const seq7 = await editOf(original, 'seq 7', second, { editSeq: 7 })
    const seq5 = await editOf(original, 'seq 5', second, { editSeq: 5 })
    const outcomes = (await postEach([original, seq7, seq5, noSeq, seq5])).map((a) => a.outcome)
    expect(outcomes).toEqual(['created', 'updated', 'duplicate', 'duplicate', 'duplicate'])
    const { bodies, history } = await stored(original)
    expect(bodies).toEqual(['seq 7'])
    expect(history.map((h) => [h.body, h.edit_seq, h.applied])).toEqual([
      ['no sequence', null, false],
      ['seq 5', '5', false],
      ['seq 7', '7', true],
    ])
  })

  it('the same edit under another delivery key (a vendor resend, a replay) is no second row', async () => {
    const original = await eventFixture({ body: 'v1', occurredAt: at(0) })
    const edit = await editOf(original, 'v2', at(1))
    const resent = { ...edit, deliveryKey: `${edit.deliveryKey}-resent` }
    await postEach([original, edit, resent])
    await postBatch([resent])
    expect(summary((await stored(original)).history)).toEqual([['v2', at(1), true]])
  })

  it("another tenant's edit under the same key adds nothing to this tenant's history", async () => {
    const original = await eventFixture({ tenant: 'TEDITS1', body: 'v1', occurredAt: at(0) })
    await postEach([original, await editOf(original, 'v2', at(1))])
    // The same message key, vouched for another tenant (the key's prefix proves nothing).
    const foreign = await editOf(original, 'not yours', at(5), { tenant: 'TEDITS2' })
    expect((await bed.post(foreign)).body.outcome).not.toBe('updated')
    expect((await postBatch([foreign]))[0]?.outcome).not.toBe('updated')
    const { bodies, history } = await stored(original)
    expect(bodies).toEqual(['v2'])
    expect(summary(history)).toEqual([['v2', at(1), true]])
  })

  it('a deleted message still records edits; removing the message removes its history', async () => {
    const original = await eventFixture({ body: 'v1', occurredAt: at(0) })
    const remove = await eventFixture({ ...original, kind: 'delete', body: '', occurredAt: at(3) })
    await postEach([original, await editOf(original, 'v2', at(1)), remove])
    await postEach([await editOf(original, 'v1.5', at(0, 30))])
    const { ids, history } = await stored(original)
    expect(summary(history)).toEqual([
      ['v1.5', at(0, 30), false],
      ['v2', at(1), true],
    ])
    // ON DELETE CASCADE: removing a message (migrations/tools/merge-duplicates.sql) is not refused.
    await bed.sql.query('DELETE FROM outbox WHERE message_id = $1', [ids[0]])
    await bed.sql.query('DELETE FROM messages WHERE id = $1', [ids[0]])
    expect(await bed.count('message_edits', 'message_id = $1', [ids[0]])).toBe(0)
  })
})
