/**
 * Every payload of the shared corpus (real vendor payloads and emails, shared/corpus/) through the
 * real path: signed requests to the deployable Worker in workerd, forwarding to the real origin on
 * real Postgres and Redis; emails through the Worker's email handler. What each must produce is
 * in ./expectations.ts. Then the same deliveries again (replays), and every payload under new ids
 * as concurrent copies: neither adds a row, a tombstone or a change.
 */
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { vendorBindings } from '../../local/vendor-deliveries'
import { type EmailWorker, startEmailWorker } from '../email/support/worker'
import { eventually, send, startTestStack, type TestStack } from '../support/test-stack'
import { CORPUS, type Expectation } from './expectations'
import { corpusFiles, type FreshPayload, freshPayload } from './payloads'

let e2e: TestStack
let mail: EmailWorker

beforeAll(async () => {
  // Without the spool an answer of 200 means written: what is in Postgres is the whole outcome.
  e2e = await startTestStack('corpus', { workerVars: { SPOOL_CHANNELS: 'none' } })
  mail = await startEmailWorker(e2e.stack, {
    ...vendorBindings(),
    SPOOL_CHANNELS: 'none',
    ORIGIN_TIMEOUT_MS: '8000',
  })
}, 180_000)

afterAll(async () => {
  await mail?.close()
  await e2e?.stop()
})

/** What a payload left in Postgres: its message rows and its tombstones (deletes of the unseen). */
interface Written {
  rows: Array<{
    body: string
    sender: string
    edited: boolean
    deleted: boolean
    attachments: number
  }>
  tombstones: number
  /** Dead letters `unrecognized_event` holding it (its body names its fresh ids). */
  kept: number
}

interface Sent {
  fresh: FreshPayload
  /** HTTP status, or the email handler's answer. */
  answer: string
}

/** One attempt, as the vendor makes it; a 503 (a copy in flight) is retried, as vendors do. */
async function deliver(fresh: FreshPayload): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const answer = await attemptOnce(fresh)
    if ((answer !== '503' && answer !== 'threw') || attempt === 8) return answer
    await new Promise((resolve) => setTimeout(resolve, 250 * attempt))
  }
}

async function attemptOnce(fresh: FreshPayload): Promise<string> {
  if (fresh.request) return String(await send(await fresh.request(e2e.stack.worker.url)))
  const email = fresh.email
  if (!email) throw new Error(`${fresh.file}: neither a request nor an email`)
  const envelope = { to: email.to, from: email.from }
  if (email.viaHandler) {
    const { status } = await mail.deliverViaHandler(email.raw, envelope)
    return status === 200 ? 'accepted' : status === 400 ? 'rejected' : 'threw'
  }
  return (await mail.deliver(email.raw, envelope)).outcome
}

/** Everything written under the payload's fresh ids. */
async function written(sql: pg.Pool, fresh: FreshPayload): Promise<Written> {
  const patterns = fresh.tags.map((tag) => `%${tag}%`)
  if (patterns.length === 0) return { rows: [], tombstones: 0, kept: 0 }
  const { rows } = await sql.query<Written['rows'][number]>(
    `SELECT body, sender_external_id AS sender, edited_at IS NOT NULL AS edited, deleted_at IS NOT NULL AS deleted,
            jsonb_array_length(attachments) AS attachments
       FROM messages WHERE channel_message_id LIKE ANY($1) ORDER BY id`,
    [patterns],
  )
  const tombstones = await sql.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM message_tombstones WHERE channel_message_id LIKE ANY($1)',
    [patterns],
  )
  const kept = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM channel_failures
      WHERE stage = 'inbound' AND error LIKE 'unrecognized_event%' AND event->>'body' LIKE ANY($1)`,
    [patterns],
  )
  return { rows, tombstones: tombstones.rows[0]?.n ?? 0, kept: kept.rows[0]?.n ?? 0 }
}

/** What it wrote, once a kept one's dead letter has gone through its queue to the origin. */
async function settled(sql: pg.Pool, fresh: FreshPayload): Promise<Written> {
  if (CORPUS[fresh.file]?.expect === 'kept') {
    await eventually(async () => (await written(sql, fresh)).kept > 0, 30_000).catch(() => {})
  }
  return written(sql, fresh)
}

async function totals(sql: pg.Pool): Promise<{ rows: number; tombstones: number }> {
  const { rows } = await sql.query<{ rows: number; tombstones: number }>(
    `SELECT (SELECT count(*) FROM messages)::int AS rows,
            (SELECT count(*) FROM message_tombstones)::int AS tombstones`,
  )
  return rows[0] ?? { rows: -1, tombstones: -1 }
}

/** What the expectation says is written; `written` must be exactly that. */
function expectWritten(file: string, expectation: Expectation, got: Written): void {
  const what = `${file}: ${JSON.stringify(got)}`
  if (expectation.expect === 'nothing') {
    expect(got, what).toEqual({ rows: [], tombstones: 0, kept: 0 })
    return
  }
  if (expectation.expect === 'kept') {
    expect(got, what).toEqual({ rows: [], tombstones: 0, kept: 1 })
    return
  }
  if (expectation.expect === 'delete') {
    expect(got, what).toEqual({ rows: [], tombstones: 1, kept: 0 })
    return
  }
  expect(got.kept, what).toBe(0)
  expect(got.tombstones, what).toBe(0)
  expect(got.rows, what).toHaveLength(1)
  const row = got.rows[0]
  expect(row?.edited, what).toBe(expectation.expect === 'edit')
  expect(row?.deleted, what).toBe(false)
  // Every text contains '': an empty expectation means the body is empty.
  if (expectation.body === '') expect(row?.body, what).toBe('')
  else if (expectation.body !== undefined) expect(row?.body, what).toContain(expectation.body)
  if (expectation.sender !== undefined) expect(row?.sender, what).toBe(expectation.sender)
  if (expectation.attachments !== undefined)
    expect(row?.attachments, what).toBe(expectation.attachments)
}

/** 200 to a webhook, or the email taken (refused where its expectation says so). */
function accepted(fresh: FreshPayload, answer: string): void {
  const email = CORPUS[fresh.file]?.rejected ? 'rejected' : 'accepted'
  expect(answer, fresh.file).toBe(fresh.vendor === 'email' ? email : '200')
}

/** `fn` over `items`, `width` at a time (the box has two cores, shared). */
async function inBatches<T, R>(items: T[], width: number, fn: (item: T) => Promise<R>) {
  const out: R[] = []
  for (let i = 0; i < items.length; i += width)
    out.push(...(await Promise.all(items.slice(i, i + width).map(fn))))
  return out
}

describe('the corpus', () => {
  it('has one expectation per payload file, and no other', () => {
    expect(Object.keys(CORPUS).sort()).toEqual(corpusFiles().sort())
  })

  const files = Object.keys(CORPUS).sort()
  let first: Sent[] = []

  it('each payload once: what its expectation says, and nothing else', async () => {
    first = []
    const unexpected: string[] = []
    for (const file of files) {
      const fresh = freshPayload(file)
      const before = await totals(e2e.stack.sql)
      const answer = await deliver(fresh)
      const got = await settled(e2e.stack.sql, fresh)
      const after = await totals(e2e.stack.sql)
      first.push({ fresh, answer })
      // Nothing written under any key but the payload's own.
      expect(after.rows - before.rows, file).toBe(got.rows.length)
      expect(after.tombstones - before.tombstones, file).toBe(got.tombstones)
      try {
        accepted(fresh, answer)
        expectWritten(file, CORPUS[file] as Expectation, got)
      } catch (err) {
        unexpected.push((err as Error).message.split('\n')[0] ?? file)
      }
    }
    expect(unexpected).toEqual([])
  }, 120_000)

  it('every payload replayed, all at once: nothing added or changed', async () => {
    expect(first).toHaveLength(files.length)
    const before = await totals(e2e.stack.sql)
    const writtenBefore = await Promise.all(first.map((s) => written(e2e.stack.sql, s.fresh)))
    const answers = await inBatches(first, 16, (s) => deliver(s.fresh))
    for (const [i, s] of first.entries()) accepted(s.fresh, answers[i] as string)
    expect(await totals(e2e.stack.sql)).toEqual(before)
    const writtenAfter = await Promise.all(first.map((s) => written(e2e.stack.sql, s.fresh)))
    expect(writtenAfter).toEqual(writtenBefore)
  }, 120_000)

  it('every payload under new ids, 4 concurrent copies each: what one copy writes', async () => {
    const before = await totals(e2e.stack.sql)
    const fresh = files.map((file) => freshPayload(file))
    const copies = fresh.flatMap((f) => [f, f, f, f])
    const answers = await inBatches(copies, 24, (f) => deliver(f))
    for (const [i, f] of copies.entries()) accepted(f, answers[i] as string)
    const got = await Promise.all(fresh.map((f) => settled(e2e.stack.sql, f)))
    for (const [i, f] of fresh.entries())
      expectWritten(f.file, CORPUS[f.file] as Expectation, got[i] as Written)
    const after = await totals(e2e.stack.sql)
    expect(after.rows - before.rows).toBe(got.reduce((n, w) => n + w.rows.length, 0))
    expect(after.tombstones - before.tombstones).toBe(got.reduce((n, w) => n + w.tombstones, 0))
  }, 120_000)
})
