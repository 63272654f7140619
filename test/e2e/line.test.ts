/**
 * LINE end to end: the deployable Worker (Miniflare), the real origin and real Postgres. One row
 * per LINE message whatever LINE redelivers (the same event, a new event id, a standby copy, a
 * batch around it), an `unsend` deletes it whether it comes after its message or before, and
 * another bot's secret writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  LINE_DESTINATION,
  LINE_TEST_SECRET,
  lineBody,
  lineEventId,
  lineMessageId,
  lineRequest,
  lineText,
  lineUnsend,
} from '../../local/vendor-deliveries'
import { send, startTestStack, type TestStack } from '../support/test-stack'

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
})
