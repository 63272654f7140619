/**
 * LINE end to end: the deployable Worker (Miniflare), the real origin and real Postgres. One row
 * per LINE message whatever LINE redelivers (the same event, a new event id, a standby copy, a
 * batch around it), an `unsend` deletes it whether it comes after its message or before, an
 * edit (`messageEdited`) is applied in its time's order, a group message without a userId is one
 * row in the group's conversation, another bot's secret writes nothing, and an event this code
 * cannot place is kept as a dead letter and lands once the code knows it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { signForward } from '../../../contract/forward-signature'
import { keptBody, UNRECOGNIZED_KIND } from '../../../contract/unrecognized-event'
import {
  LINE_DESTINATION,
  LINE_TEST_SECRET,
  LINE_USER,
  lineBody,
  lineEventId,
  lineMessageId,
  lineRequest,
  lineText,
  lineUnsend,
  TEST_SECRETS,
} from '../../../local/vendor-deliveries'
import { runFailuresCli } from '../../support/origin'
import { eventually, send, startTestStack, type TestStack } from '../../support/test-stack'

let e2e: TestStack

beforeAll(async () => {
  e2e = await startTestStack('e2e-line', {
    workerVars: { LINE_CHANNEL_SECRET: LINE_TEST_SECRET, SPOOL_CHANNELS: 'none' },
  })
}, 180_000)

afterAll(async () => {
  await e2e?.stop()
})

const post = async (events: unknown[], secret?: string) =>
  send(await lineRequest(`${e2e.stack.worker.url}/webhooks/line`, lineBody(events), secret))

async function rowsOf(messageId: string) {
  const { rows } = await e2e.stack.sql.query(
    `SELECT body, deleted_at IS NOT NULL AS deleted FROM messages
      WHERE channel = 'line' AND channel_message_id = $1`,
    [`${LINE_DESTINATION}:${messageId}`],
  )
  return rows
}

/** A messageEdited event (LINE's SDKs' MessageEditedEvent) of message `id`. */
const lineEdit = (id: string, text: string, timestamp: number) => ({
  ...lineText(id, text, { timestamp }),
  type: 'messageEdited',
})

describe('LINE through the local stack', () => {
  it('a message redelivered every way LINE can is one row', async () => {
    const id = lineMessageId()
    const eventId = lineEventId()
    const first = lineText(id, 'hello', { webhookEventId: eventId })
    expect(await post([first])).toBe(200)
    expect(await post([first])).toBe(200)
    // Its claim gone (expired): Postgres answers.
    await e2e.stack.redisClient.del(
      `${e2e.stack.keyPrefix}dedup:line:${LINE_DESTINATION}:${eventId}`,
    )
    expect(await post([{ ...first, deliveryContext: { isRedelivery: true } }])).toBe(200)
    const standby = lineText(id, 'hello', { mode: 'standby' })
    const other = lineText(lineMessageId(), 'another one')
    expect(await post([standby, other, first])).toBe(200)
    expect(await rowsOf(id)).toEqual([{ body: 'hello', deleted: false }])
  })

  it('unsend after its message deletes the row; before it, the message lands deleted', async () => {
    const [after, before] = [lineMessageId(), lineMessageId()]
    expect(await post([lineText(after, 'oops')])).toBe(200)
    expect(await post([lineUnsend(after)])).toBe(200)
    expect(await rowsOf(after)).toEqual([{ body: 'oops', deleted: true }])
    expect(await post([lineUnsend(before)])).toBe(200)
    expect(await post([lineText(before, 'too late')])).toBe(200)
    expect(await rowsOf(before)).toEqual([{ body: 'too late', deleted: true }])
  })

  it('a forged signature writes nothing', async () => {
    const id = lineMessageId()
    expect(await post([lineText(id, 'forged')], 'not-the-secret')).toBe(401)
    expect(await rowsOf(id)).toEqual([])
  })

  it('messageEdited: an edit of its message, the largest timestamp the latest state, replays nothing more', async () => {
    const id = lineMessageId()
    expect(await post([lineText(id, 'helo', { timestamp: 1_700_000_000_000 })])).toBe(200)
    const second = lineEdit(id, 'hello, world', 1_700_000_002_000)
    const first = lineEdit(id, 'hello', 1_700_000_001_000)
    // LINE: "Multiple messageEdited webhook events may arrive out of order."
    expect(await post([second])).toBe(200)
    expect(await post([first])).toBe(200)
    expect(await post([second, first])).toBe(200)
    expect(await rowsOf(id)).toEqual([{ body: 'hello, world', deleted: false }])
    const { rows } = await e2e.stack.sql.query(
      `SELECT e.body, e.applied FROM message_edits e JOIN messages m ON m.id = e.message_id
        WHERE m.channel_message_id = $1 ORDER BY e.edited_at`,
      [`${LINE_DESTINATION}:${id}`],
    )
    expect(rows).toEqual([
      { body: 'hello', applied: false },
      { body: 'hello, world', applied: true },
    ])
  })

  it('a group message without source.userId: one row in the group, the group its sender; replays one row', async () => {
    const id = lineMessageId()
    const event = {
      ...lineText(id, 'from a desktop client'),
      source: { type: 'group', groupId: 'Ca56f94637cc4347f90a25382909b24b9' },
    }
    expect(await post([event])).toBe(200)
    expect(await post([{ ...event, webhookEventId: lineEventId() }])).toBe(200)
    const { rows } = await e2e.stack.sql.query(
      `SELECT cu.external_id FROM messages m JOIN conversations c ON c.id = m.conversation_id
         JOIN customers cu ON cu.id = c.customer_id WHERE m.channel_message_id = $1`,
      [`${LINE_DESTINATION}:${id}`],
    )
    expect(rows).toEqual([{ external_id: 'group:Ca56f94637cc4347f90a25382909b24b9' }])
  })
})

describe('LINE events this code cannot place: kept, and replayed once it knows them', () => {
  const failures = async (like: string) =>
    (
      await e2e.stack.sql.query<{ id: string; status: string; error: string }>(
        `SELECT id::text, status, error FROM channel_failures
          WHERE stage = 'inbound' AND delivery_key LIKE $1 ORDER BY id`,
        [like],
      )
    ).rows
  const replay = (id: string) =>
    runFailuresCli(
      { databaseUrl: e2e.stack.database.databaseUrl, wsProxy: e2e.stack.database.neonWsProxy },
      ['replay', id],
      {
        GATEWAY_URL: e2e.stack.worker.url,
        ORIGIN_SHARED_SECRET: TEST_SECRETS.origin,
        DOWNSTREAM_URL: '',
      },
    )

  /**
   * A dead-letter report as a Worker's dead-letter consumer sends it (signed, to the origin), of a
   * LINE body its code could not place: its delivery key.
   */
  async function keptByAnOlderWorker(body: unknown, tenant: string | null, reason: string) {
    const deliveryKey = `dedup:unrecognized:line:${tenant ?? '-'}:h${lineEventId()}`
    const event = {
      ...{ v: 1, kind: UNRECOGNIZED_KIND, channel: 'line', deliveryKey, reason, tenant },
      ...{ path: '/webhooks/line', contentType: 'application/json', receivedAt: Date.now() },
      ...keptBody(JSON.stringify(body)),
    }
    const error = `unrecognized_event: ${reason}`
    const report = JSON.stringify({ channel: 'line', deliveryKey, event, error, attempts: 1 })
    const route = { method: 'POST', path: '/v1/failures/inbound' }
    const recorded = await fetch(`${e2e.stack.origin.url}${route.path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(await signForward(TEST_SECRETS.origin, report, undefined, route)),
      },
      body: report,
    })
    expect(recorded.status).toBe(201)
    return deliveryKey
  }

  it('an unfamiliar event type: 200, one dead letter (unrecognized_event) with the raw event; a replay leaves it dead', async () => {
    // line/line-bot-sdk-nodejs test/libs-webhook.spec.ts @ 3c0a10c71692fc877fc97b9fcc8fd911fd5c7c04
    // ("unknownEvent"): a new event type with a field of its own.
    const novel = {
      type: 'greatNewEvent',
      greatNewField: `aaaa-${lineEventId()}`,
      timestamp: 333333,
      mode: 'active',
      source: { type: 'user', userId: LINE_USER },
      webhookEventId: lineEventId(),
      deliveryContext: { isRedelivery: false },
    }
    const response = await fetch(
      await lineRequest(`${e2e.stack.worker.url}/webhooks/line`, lineBody([novel])),
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('x-dedup-decision')).toBe('unrecognized')
    // A shared channel secret vouches for no one tenant: the key says `-`.
    const like = 'dedup:unrecognized:line:-:h%'
    let kept: Awaited<ReturnType<typeof failures>> = []
    await eventually(async () => {
      kept = (await failures(like)).filter((f) => f.error.includes('line_type_greatNewEvent'))
      return kept.length > 0
    })
    const { rows } = await e2e.stack.sql.query(
      `SELECT event->>'body' AS body, event->>'tenant' AS tenant FROM channel_failures WHERE id = $1`,
      [kept[0]?.id],
    )
    expect(JSON.parse(rows[0]?.body)).toEqual({ destination: LINE_DESTINATION, events: [novel] })
    expect(rows[0]?.tenant).toBeNull()
    const again = await replay(kept[0]?.id as string)
    expect(again.code).not.toBe(0)
    expect(again.stderr).toContain('still unrecognized (line_type_greatNewEvent)')
    expect((await failures(like)).find((f) => f.id === kept[0]?.id)?.status).toBe('dead')
  }, 90_000)

  it('a messageEdited kept by a Worker that did not know it lands as the edit on replay, once', async () => {
    const id = lineMessageId()
    expect(await post([lineText(id, 'befor', { timestamp: 1_700_000_000_000 })])).toBe(200)
    // What the dead-letter consumer of a Worker without messageEdited reported: the event whole.
    const body = lineBody([lineEdit(id, 'before, fixed', 1_700_000_005_000)])
    const deliveryKey = await keptByAnOlderWorker(body, null, 'line_type_messageEdited')
    const [row] = await failures(deliveryKey)
    const first = await replay(row?.id as string)
    expect(first.stdout).toContain('classified again: forwarded; resolved')
    expect(await rowsOf(id)).toEqual([{ body: 'before, fixed', deleted: false }])
    expect((await failures(deliveryKey))[0]?.status).toBe('resolved')
    // Replayed again: nothing to replay; and the same event redelivered by LINE is a duplicate.
    expect((await replay(row?.id as string)).stdout).toContain('already resolved')
    expect(await post([lineEdit(id, 'before, fixed', 1_700_000_005_000)])).toBe(200)
    expect(await rowsOf(id)).toEqual([{ body: 'before, fixed', deleted: false }])
  }, 90_000)

  it('a kept event that names another bot than the one that verified it is refused on replay', async () => {
    const id = lineMessageId()
    const body = lineBody([lineText(id, 'not yours')], 'Ufedcba9876543210fedcba9876543210')
    const deliveryKey = await keptByAnOlderWorker(body, LINE_DESTINATION, 'line_type_other')
    const [row] = await failures(deliveryKey)
    const refused = await replay(row?.id as string)
    expect(refused.stderr).toContain('still unrecognized (unauthorized)')
    const { rows } = await e2e.stack.sql.query(
      `SELECT 1 FROM messages WHERE channel_message_id LIKE $1`,
      [`%:${id}`],
    )
    expect(rows).toEqual([])
  }, 90_000)
})
