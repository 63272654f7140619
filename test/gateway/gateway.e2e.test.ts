/**
 * End to end through the deployable Worker bundle (Miniflare), the real origin (a separate
 * process), real Postgres (through the Neon proxy) and real Redis (through the Upstash stand-in).
 * Deliveries are real signed vendor requests; the assertions are on database rows and Redis keys.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  nowSeconds,
  randomId,
  type SignedDelivery,
  slackDelivery,
  slackRequest,
  TEST_SECRETS,
  TWILIO_ACCOUNT,
  telegramDelivery,
  telegramRequest,
  twilioDelivery,
  twilioRequest,
  WECHAT_AES_ACCOUNT,
  WECHAT_TEST_AES_KEY,
  wechatDelivery,
} from '../../local/vendor-deliveries'
import * as media from '../channels/support/media-payloads'
import { DONE_VALUE } from '../support/claim-values'
import { send, startTestStack, type TestStack } from '../support/test-stack'

let e2e: TestStack

beforeAll(async () => {
  // These cases are the gateway without the spool (origin down = vendor told to retry);
  // test/spool/ runs the same stack with it.
  e2e = await startTestStack('e2e-gateway', { workerVars: { SPOOL_CHANNELS: 'none' } })
}, 180_000)

afterAll(async () => {
  await e2e?.stop()
})

const rows = (d: SignedDelivery) => e2e.rows(d)
const claim = (d: SignedDelivery) => e2e.claim(d)
const deliver = (d: SignedDelivery) => e2e.deliver(d)

const CASES: Array<{ name: string; fresh: () => SignedDelivery }> = [
  { name: 'slack', fresh: () => slackDelivery() },
  { name: 'whatsapp', fresh: () => twilioDelivery() },
  { name: 'telegram', fresh: () => telegramDelivery() },
  { name: 'wechat', fresh: () => wechatDelivery() },
  {
    name: 'wechat encrypted',
    fresh: () => wechatDelivery({ account: WECHAT_AES_ACCOUNT, aesKey: WECHAT_TEST_AES_KEY }),
  },
]

describe.each(CASES)('$name end to end', ({ fresh }) => {
  it('the same delivery 8 times: one row, one outbox item, every answer 200', async () => {
    const d = fresh()
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) statuses.push(await deliver(d))
    expect(statuses).toEqual(Array(8).fill(200))
    expect(await rows(d)).toBe(1)
    expect(await e2e.outbox(d)).toHaveLength(1)
    expect(await claim(d)).toMatch(DONE_VALUE)
  })

  it('30 concurrent copies: one row', async () => {
    const d = fresh()
    const requests = await Promise.all(
      Array.from({ length: 30 }, () => d.request(e2e.stack.worker.url)),
    )
    const statuses = await Promise.all(requests.map(send))
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0)
    // A copy may be told to retry (503) while the first is still in flight; never anything else.
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true)
    expect(await rows(d)).toBe(1)
  })

  it('the Redis key gone between deliveries (TTL expiry): Postgres keeps it one row', async () => {
    const d = fresh()
    expect(await deliver(d)).toBe(200)
    expect(await e2e.stack.redisClient.del(`${e2e.stack.keyPrefix}${d.deliveryKey}`)).toBe(1)
    expect(await deliver(d)).toBe(200)
    expect(await rows(d)).toBe(1)
    expect(await claim(d)).toMatch(DONE_VALUE)
  })

  it('a bad signature: 401, no Redis key, no row', async () => {
    const d = fresh()
    const good = await d.request(e2e.stack.worker.url)
    const headers = new Headers(good.headers)
    for (const name of [
      'x-slack-signature',
      'x-twilio-signature',
      'x-telegram-bot-api-secret-token',
    ]) {
      if (headers.has(name)) headers.set(name, name === 'x-slack-signature' ? 'v0=00' : 'forged')
    }
    // WeChat signs in the query.
    const url = new URL(good.url)
    for (const name of ['signature', 'msg_signature']) {
      if (url.searchParams.has(name)) url.searchParams.set(name, '0'.repeat(40))
    }
    const forged = new Request(url, { method: 'POST', headers, body: await good.text() })
    expect(await send(forged)).toBe(401)
    expect(await claim(d)).toBeNull()
    expect(await rows(d)).toBe(0)
  })
})

describe('Postgres as the backstop', () => {
  it('a fresh Slack event_id for the same message: one row (caught by Postgres)', async () => {
    const ts = `${nowSeconds()}.${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`
    const [first, second] = [slackDelivery({ ts }), slackDelivery({ ts })]
    expect(await deliver(first)).toBe(200)
    expect(await deliver(second)).toBe(200)
    expect(await rows(first)).toBe(1)
  })

  it('Telegram message 42 in two chats: two rows', async () => {
    const base = Math.floor(Math.random() * 2 ** 30)
    const chats = [base + 1, base + 2].map((chatId, i) =>
      telegramDelivery({ updateId: base + i, chatId, messageId: 42 }),
    )
    for (const d of chats) expect(await deliver(d)).toBe(200)
    for (const d of chats) expect(await rows(d)).toBe(1)
  })

  it('a Twilio status callback never becomes a row and does not block the message', async () => {
    const messageSid = `SM${randomId()}`
    const message = twilioDelivery({ messageSid })
    const status = twilioDelivery({ messageSid, status: 'delivered' })
    expect(await deliver(status)).toBe(200)
    expect(await rows(message)).toBe(0)
    expect(await deliver(message)).toBe(200)
    expect(await rows(message)).toBe(1)
  })
})

describe('outages', () => {
  it('origin down: the claim is released, the retry after recovery makes exactly one row', async () => {
    const d = slackDelivery()
    await e2e.stack.origin.kill('SIGKILL')
    try {
      expect(await deliver(d)).toBe(503)
      expect(await claim(d)).toBeNull()
      expect(await rows(d)).toBe(0)
    } finally {
      await e2e.stack.origin.restart()
    }
    expect(await deliver(d)).toBe(200)
    expect(await deliver(d)).toBe(200)
    expect(await rows(d)).toBe(1)
  })

  it('Redis stopped: replays are still one row (Postgres decides); back up, Redis decides again', async () => {
    const d = twilioDelivery()
    expect(await deliver(d)).toBe(200)
    await e2e.stack.redis.stop()
    try {
      for (let i = 0; i < 3; i++) expect(await deliver(d)).toBe(200)
      const other = twilioDelivery()
      expect(await deliver(other)).toBe(200)
      expect(await rows(other)).toBe(1)
    } finally {
      await e2e.stack.redis.start()
    }
    expect(await rows(d)).toBe(1)
    expect(await deliver(d)).toBe(200)
    expect(await claim(d)).toMatch(DONE_VALUE)
  })
})

describe('attachments end to end', () => {
  async function stored(channel: string, messageKey: string) {
    const result = await e2e.stack.sql.query(
      'SELECT body, attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
      [channel, messageKey],
    )
    return result.rows
  }

  it('a Telegram photo without caption, delivered twice: one row, empty body, the photo’s metadata', async () => {
    const updateId = Math.floor(Math.random() * 2 ** 31)
    const chatId = Math.floor(Math.random() * 2 ** 40)
    const url = `${e2e.stack.worker.url}/webhooks/telegram`
    const update = media.telegramPhotoUpdate({ updateId, chatId, messageId: 7 })
    expect(await send(telegramRequest(url, update))).toBe(200)
    expect(await send(telegramRequest(url, update))).toBe(200)
    expect(await stored('telegram', `${TEST_SECRETS.telegramBotId}:${chatId}:7`)).toEqual([
      { body: '', attachments: [media.TELEGRAM_PHOTO] },
    ])
  })

  it('a Slack file_share with text, and a Twilio MMS: their files in the row, the text as body', async () => {
    const ts = `${Math.floor(Date.now() / 1000)}.${Math.floor(Math.random() * 1e6)}`
    const share = media.slackFileShare([media.SLACK_FILE], {
      text: 'see the scan',
      eventId: `Ev${randomId()}`,
      ts,
    })
    expect(await send(await slackRequest(`${e2e.stack.worker.url}/webhooks/slack`, share))).toBe(
      200,
    )
    expect(await stored('slack', `T123ABC456:C123ABC456:${ts}`)).toEqual([
      { body: 'see the scan', attachments: [media.SLACK_FILE_ATTACHMENT] },
    ])

    const sid = `SM${randomId()}`
    const mediaSid = 'ME0123456789abcdef0123456789abcdef'
    const mms = media.twilioMediaParams([['audio/ogg', media.twilioMediaUrl(mediaSid)]], {
      messageSid: sid,
      body: '',
    })
    expect(await send(await twilioRequest(`${e2e.stack.worker.url}/webhooks/twilio`, mms))).toBe(
      200,
    )
    expect(await stored('whatsapp', `${TWILIO_ACCOUNT}:${sid}`)).toEqual([
      {
        body: '',
        attachments: [
          {
            kind: 'audio',
            mediaId: mediaSid,
            url: media.twilioMediaUrl(mediaSid),
            mimeType: 'audio/ogg',
          },
        ],
      },
    ])
  })
})
