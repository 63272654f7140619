/**
 * Messenger and Instagram end to end: the deployable Worker (Miniflare), the real origin and real
 * Postgres. One row per `mid` whatever Meta resends (the same POST, the standby copy, the message
 * again after its claim expired); `message_edit` updates it, before or after its message;
 * Instagram's `is_deleted` deletes it, before or after; reads and reactions make no row; the
 * Page's echoes none either.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  META_PAGE,
  META_TEST_SECRET,
  META_USER,
  META_VERIFY_TOKEN,
  messagingBody,
  messagingEvent,
  messagingText,
  metaMid,
  metaRequest,
} from '../../../local/vendor-deliveries'
import { send, startTestStack, type TestStack } from '../../support/test-stack'

let e2e: TestStack

beforeAll(async () => {
  e2e = await startTestStack('e2e-meta-messaging', {
    workerVars: {
      MESSENGER_APP_SECRET: META_TEST_SECRET,
      MESSENGER_VERIFY_TOKEN: META_VERIFY_TOKEN,
      INSTAGRAM_APP_SECRET: META_TEST_SECRET,
      INSTAGRAM_VERIFY_TOKEN: META_VERIFY_TOKEN,
      SPOOL_CHANNELS: 'none',
    },
  })
}, 180_000)

afterAll(async () => {
  await e2e?.stop()
})

const CHANNELS = [
  { name: 'messenger', object: 'page' },
  { name: 'instagram', object: 'instagram' },
] as const

describe.each(CHANNELS)('$name through the local stack', ({ name, object }) => {
  const post = async (entries: Parameters<typeof messagingBody>[1], secret = META_TEST_SECRET) =>
    send(
      await metaRequest(
        `${e2e.stack.worker.url}/webhooks/${name}`,
        messagingBody(object, entries),
        secret,
      ),
    )
  const messaging = (...events: unknown[]) => post([{ messaging: events }])

  async function rowsOf(mid: string) {
    const { rows } = await e2e.stack.sql.query(
      `SELECT body, edited_at IS NOT NULL AS edited, deleted_at IS NOT NULL AS deleted
         FROM messages WHERE channel = $1 AND channel_message_id = $2`,
      [name, `${META_PAGE}:${mid}`],
    )
    return rows
  }

  it('a message resent every way Meta can is one row', async () => {
    const mid = metaMid()
    const message = messagingText(mid, 'hello')
    expect(await messaging(message)).toBe(200)
    expect(await post([{ messaging: [message] }, { standby: [message] }])).toBe(200)
    await e2e.stack.redisClient.del(`${e2e.stack.keyPrefix}dedup:${name}:${META_PAGE}:${mid}`)
    expect(await messaging(message, messagingText(metaMid(), 'another'))).toBe(200)
    expect(await rowsOf(mid)).toEqual([{ body: 'hello', edited: false, deleted: false }])
  })

  it('an edit after its message updates the row; one before it creates it, the original a duplicate', async () => {
    const [after, before] = [metaMid(), metaMid()]
    const edit = (mid: string) =>
      messagingEvent(
        { message_edit: { mid, text: 'edited', num_edit: 1 } },
        { timestamp: 1_700_000_000_000 },
      )
    expect(await messaging(messagingText(after, 'original'))).toBe(200)
    expect(await messaging(edit(after))).toBe(200)
    expect(await rowsOf(after)).toEqual([{ body: 'edited', edited: true, deleted: false }])
    expect(await messaging(edit(before))).toBe(200)
    expect(await messaging(messagingText(before, 'original'))).toBe(200)
    expect(await rowsOf(before)).toEqual([
      expect.objectContaining({ body: 'edited', deleted: false }),
    ])
  })

  it("reads, reactions and the Page's echoes make no row; a forged POST writes nothing", async () => {
    const mid = metaMid()
    const echo = messagingEvent(
      { message: { mid, text: 'our reply', is_echo: true } },
      { sender: META_PAGE, recipient: META_USER },
    )
    const read = messagingEvent({ read: { watermark: 1_458_668_856_253 } })
    const reaction = messagingEvent({ reaction: { mid, action: 'react', reaction: 'love' } })
    expect(await messaging(echo, read, reaction)).toBe(200)
    expect(await rowsOf(mid)).toEqual([])
    const forged = metaMid()
    expect(await post([{ messaging: [messagingText(forged, 'x')] }], 'not-the-secret')).toBe(401)
    expect(await rowsOf(forged)).toEqual([])
  })

  it("the Page editing its own message (an echo's edit) makes no row, and no customer that is the Page", async () => {
    const mid = metaMid()
    const echo = messagingEvent(
      { message: { mid, text: 'our reply', is_echo: true } },
      { sender: META_PAGE, recipient: META_USER },
    )
    const ownEdit = messagingEvent(
      { message_edit: { mid, text: 'our reply, corrected', num_edit: 1 } },
      { sender: META_PAGE, recipient: META_USER },
    )
    expect(await messaging(echo, ownEdit)).toBe(200)
    expect(await rowsOf(mid)).toEqual([])
    const { rows } = await e2e.stack.sql.query(
      'SELECT 1 FROM customers WHERE channel = $1 AND external_id = $2',
      [name, META_PAGE],
    )
    expect(rows).toEqual([])
  })

  it("Meta's printed id forms (mid.<ms>:<hex>, m_<ms>:<hex>, mid.$cAA…): each one row, its edit applied", async () => {
    for (const form of ['mid.1457764197618:', 'm_1457764197618:', 'mid.$cAAD5QiNHkz1m6cyj']) {
      const mid = `${form}${metaMid().slice(2)}`
      expect(await messaging(messagingText(mid, 'hello, world!'))).toBe(200)
      expect(await messaging(messagingText(mid, 'hello, world!'))).toBe(200)
      const edit = messagingEvent({ message_edit: { mid, text: 'hello, edited', num_edit: 1 } })
      expect(await messaging(edit)).toBe(200)
      expect(await rowsOf(mid)).toEqual([{ body: 'hello, edited', edited: true, deleted: false }])
    }
  })

  it.runIf(name === 'instagram')(
    'is_deleted after its message deletes the row; before it, the message lands deleted',
    async () => {
      const [after, before] = [metaMid(), metaMid()]
      const deleted = (mid: string) => messagingEvent({ message: { mid, is_deleted: true } })
      expect(await messaging(messagingText(after, 'oops'))).toBe(200)
      expect(await messaging(deleted(after))).toBe(200)
      expect(await rowsOf(after)).toEqual([{ body: 'oops', edited: false, deleted: true }])
      expect(await messaging(deleted(before))).toBe(200)
      expect(await messaging(messagingText(before, 'too late'))).toBe(200)
      expect(await rowsOf(before)).toEqual([{ body: 'too late', edited: false, deleted: true }])
    },
  )
})
