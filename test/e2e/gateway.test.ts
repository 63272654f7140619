/**
 * End to end through the deployable Worker bundle (Miniflare), the real origin (a separate
 * process), real Postgres (through the Neon proxy) and real Redis (through the Upstash stand-in).
 * Deliveries are real signed vendor requests; the assertions are on database rows and Redis keys.
 */
import { Redis } from 'ioredis'
import type pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  createTestDatabase,
  databasePool,
  deleteRedisPrefix,
  REDIS_URL,
  runId,
  type TestDatabase,
} from '../../local/services'
import {
  type DatabaseLayer,
  type OriginHandle,
  type RedisLayer,
  startDatabaseLayer,
  startOrigin,
  startRedisLayer,
  startWorkerMiniflare,
  type WorkerMiniflareHandle,
} from '../../local/stack'
import { DONE_VALUE } from '../support/claim-values'
import * as media from '../unit/media-payloads'
import {
  slackMessageEvent,
  slackRequest,
  TEST_SECRETS,
  telegramRequest,
  telegramUpdate,
  twilioDeliveryKey,
  twilioParams,
  twilioRequest,
} from '../unit/signed-requests'

const UPSTASH_TOKEN = `e2e-upstash-${runId()}`
const KEY_PREFIX = `test:e2e-gateway:${runId()}:`
const ACCOUNT = 'AC0123456789abcdef0123456789abcdef'

let db: TestDatabase
let database: DatabaseLayer
let redisLayer: RedisLayer
let origin: OriginHandle
let worker: WorkerMiniflareHandle
let sql: pg.Pool
let redis: Redis

beforeAll(async () => {
  db = await createTestDatabase()
  ;[database, redisLayer] = await Promise.all([
    startDatabaseLayer({ databaseUrl: db.url, createDatabase: false }),
    startRedisLayer({ redisUrl: REDIS_URL, token: UPSTASH_TOKEN }),
  ])
  origin = await startOrigin({
    env: { ...database.originEnv, ORIGIN_SHARED_SECRET: TEST_SECRETS.origin, LOG_LEVEL: 'warn' },
  })
  worker = await startWorkerMiniflare({
    vars: {
      SLACK_SIGNING_SECRET: TEST_SECRETS.slack,
      TWILIO_AUTH_TOKEN: TEST_SECRETS.twilio,
      TELEGRAM_SECRET_TOKEN: TEST_SECRETS.telegram,
      TELEGRAM_BOT_ID: TEST_SECRETS.telegramBotId,
      ORIGIN_SHARED_SECRET: TEST_SECRETS.origin,
      ORIGIN_URL: origin.url,
      UPSTASH_REDIS_REST_URL: redisLayer.url,
      UPSTASH_REDIS_REST_TOKEN: UPSTASH_TOKEN,
      REDIS_KEY_PREFIX: KEY_PREFIX,
      // These cases are the gateway without the spool (origin down = vendor told to retry);
      // test/spool/ runs the same stack with it.
      SPOOL_CHANNELS: 'none',
    },
  })
  sql = databasePool(db.url)
  redis = new Redis(REDIS_URL)
}, 180_000)

afterAll(async () => {
  await sql?.end()
  redis?.disconnect()
  await worker?.stop()
  await origin?.stop()
  await redisLayer?.stop()
  await database?.stop()
  await db?.drop()
  await deleteRedisPrefix(KEY_PREFIX)
})

const uniq = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`

async function rows(channel: string, messageKey: string): Promise<number> {
  const result = await sql.query(
    'SELECT count(*)::int AS n FROM messages WHERE channel = $1 AND channel_message_id = $2',
    [channel, messageKey],
  )
  return result.rows[0].n as number
}

async function outboxRows(channel: string, messageKey: string): Promise<number> {
  const result = await sql.query(
    `SELECT count(*)::int AS n FROM outbox o JOIN messages m ON m.id = o.message_id
     WHERE m.channel = $1 AND m.channel_message_id = $2`,
    [channel, messageKey],
  )
  return result.rows[0].n as number
}

/** Sends to the Worker: the request is built for its URL, then posted over HTTP. */
async function send(request: Request): Promise<number> {
  const response = await fetch(request)
  await response.arrayBuffer()
  return response.status
}

interface Case {
  name: string
  channel: string
  fresh(): { make: () => Promise<Request>; messageKey: string; deliveryKey: string }
}

const CASES: Case[] = [
  {
    name: 'slack',
    channel: 'slack',
    fresh() {
      const eventId = `Ev${uniq()}`
      const ts = `${Math.floor(Date.now() / 1000)}.${Math.floor(Math.random() * 1e6)}`
      return {
        make: () =>
          slackRequest(`${worker.url}/webhooks/slack`, slackMessageEvent({ eventId, ts })),
        messageKey: `T123ABC456:C123ABC456:${ts}`,
        deliveryKey: `dedup:slack:A123ABC456:${eventId}`,
      }
    },
  },
  {
    name: 'whatsapp',
    channel: 'whatsapp',
    fresh() {
      const sid = `SM${uniq()}`
      return {
        make: () =>
          twilioRequest(`${worker.url}/webhooks/twilio`, twilioParams({ messageSid: sid })),
        messageKey: `${ACCOUNT}:${sid}`,
        deliveryKey: twilioDeliveryKey('wa', sid),
      }
    },
  },
  {
    name: 'telegram',
    channel: 'telegram',
    fresh() {
      const updateId = Math.floor(Math.random() * 2 ** 31)
      const chatId = Math.floor(Math.random() * 2 ** 40)
      return {
        make: async () =>
          telegramRequest(
            `${worker.url}/webhooks/telegram`,
            telegramUpdate({ updateId, chatId, messageId: 42 }),
          ),
        messageKey: `${TEST_SECRETS.telegramBotId}:${chatId}:42`,
        deliveryKey: `dedup:telegram:${TEST_SECRETS.telegramBotId}:${updateId}`,
      }
    },
  },
]

describe.each(CASES)('$name end to end', ({ channel, fresh }) => {
  it('the same delivery 8 times: one row, one outbox item, every answer 200', async () => {
    const { make, messageKey, deliveryKey } = fresh()
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) statuses.push(await send(await make()))
    expect(statuses).toEqual(Array(8).fill(200))
    expect(await rows(channel, messageKey)).toBe(1)
    expect(await outboxRows(channel, messageKey)).toBe(1)
    expect(await redis.get(KEY_PREFIX + deliveryKey)).toMatch(DONE_VALUE)
  })

  it('30 concurrent copies: one row', async () => {
    const { make, messageKey } = fresh()
    const requests = await Promise.all(Array.from({ length: 30 }, make))
    const statuses = await Promise.all(requests.map(send))
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThan(0)
    // A copy may be told to retry (503) while the first is still in flight; never anything else.
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true)
    expect(await rows(channel, messageKey)).toBe(1)
  })

  it('the Redis key gone between deliveries (TTL expiry): Postgres keeps it one row', async () => {
    const { make, messageKey, deliveryKey } = fresh()
    expect(await send(await make())).toBe(200)
    expect(await redis.del(KEY_PREFIX + deliveryKey)).toBe(1)
    expect(await send(await make())).toBe(200)
    expect(await rows(channel, messageKey)).toBe(1)
    expect(await redis.get(KEY_PREFIX + deliveryKey)).toMatch(DONE_VALUE)
  })

  it('a bad signature: 401, no Redis key, no row', async () => {
    const { make, messageKey, deliveryKey } = fresh()
    const good = await make()
    const headers = new Headers(good.headers)
    for (const name of [
      'x-slack-signature',
      'x-twilio-signature',
      'x-telegram-bot-api-secret-token',
    ]) {
      if (headers.has(name)) headers.set(name, name === 'x-slack-signature' ? 'v0=00' : 'forged')
    }
    const forged = new Request(good.url, { method: 'POST', headers, body: await good.text() })
    expect(await send(forged)).toBe(401)
    expect(await redis.exists(KEY_PREFIX + deliveryKey)).toBe(0)
    expect(await rows(channel, messageKey)).toBe(0)
  })
})

describe('Postgres as the backstop', () => {
  it('a fresh Slack event_id for the same message: one row (caught by Postgres)', async () => {
    const ts = `${Math.floor(Date.now() / 1000)}.${Math.floor(Math.random() * 1e6)}`
    const url = `${worker.url}/webhooks/slack`
    expect(
      await send(await slackRequest(url, slackMessageEvent({ eventId: `Ev${uniq()}`, ts }))),
    ).toBe(200)
    expect(
      await send(await slackRequest(url, slackMessageEvent({ eventId: `Ev${uniq()}`, ts }))),
    ).toBe(200)
    expect(await rows('slack', `T123ABC456:C123ABC456:${ts}`)).toBe(1)
  })

  it('Telegram message 42 in two chats: two rows', async () => {
    const url = `${worker.url}/webhooks/telegram`
    const base = Math.floor(Math.random() * 2 ** 30)
    const chats = [base + 1, base + 2]
    for (const [i, chatId] of chats.entries()) {
      expect(
        await send(
          telegramRequest(url, telegramUpdate({ updateId: base + i, chatId, messageId: 42 })),
        ),
      ).toBe(200)
    }
    for (const chatId of chats) {
      expect(await rows('telegram', `${TEST_SECRETS.telegramBotId}:${chatId}:42`)).toBe(1)
    }
  })

  it('a Twilio status callback never becomes a row and does not block the message', async () => {
    const sid = `SM${uniq()}`
    const url = `${worker.url}/webhooks/twilio`
    expect(
      await send(await twilioRequest(url, twilioParams({ messageSid: sid, status: 'delivered' }))),
    ).toBe(200)
    expect(await rows('whatsapp', `${ACCOUNT}:${sid}`)).toBe(0)
    expect(await send(await twilioRequest(url, twilioParams({ messageSid: sid })))).toBe(200)
    expect(await rows('whatsapp', `${ACCOUNT}:${sid}`)).toBe(1)
  })
})

describe('outages', () => {
  it('origin down: the claim is released, the retry after recovery makes exactly one row', async () => {
    const { make, messageKey, deliveryKey } = CASES[0]?.fresh() ?? ({} as never)
    await origin.kill('SIGKILL')
    try {
      expect(await send(await make())).toBe(503)
      expect(await redis.exists(KEY_PREFIX + deliveryKey)).toBe(0)
      expect(await rows('slack', messageKey)).toBe(0)
    } finally {
      await origin.restart()
    }
    expect(await send(await make())).toBe(200)
    expect(await send(await make())).toBe(200)
    expect(await rows('slack', messageKey)).toBe(1)
  })

  it('Redis stopped: replays are still one row (Postgres decides); back up, Redis decides again', async () => {
    const { make, messageKey, deliveryKey } = CASES[1]?.fresh() ?? ({} as never)
    expect(await send(await make())).toBe(200)
    const port = redisLayer.port
    await redisLayer.stop()
    try {
      for (let i = 0; i < 3; i++) expect(await send(await make())).toBe(200)
      const other = CASES[1]?.fresh() ?? ({} as never)
      expect(await send(await other.make())).toBe(200)
      expect(await rows('whatsapp', other.messageKey)).toBe(1)
    } finally {
      redisLayer = await startRedisLayer({ redisUrl: REDIS_URL, token: UPSTASH_TOKEN, port })
    }
    expect(await rows('whatsapp', messageKey)).toBe(1)
    expect(await send(await make())).toBe(200)
    expect(await redis.get(KEY_PREFIX + deliveryKey)).toMatch(DONE_VALUE)
  })
})

describe('attachments end to end', () => {
  async function stored(channel: string, messageKey: string) {
    const result = await sql.query(
      'SELECT body, attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
      [channel, messageKey],
    )
    return result.rows
  }

  it('a Telegram photo without caption, delivered twice: one row, empty body, the photo’s metadata', async () => {
    const updateId = Math.floor(Math.random() * 2 ** 31)
    const chatId = Math.floor(Math.random() * 2 ** 40)
    const url = `${worker.url}/webhooks/telegram`
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
      eventId: `Ev${uniq()}`,
      ts,
    })
    expect(await send(await slackRequest(`${worker.url}/webhooks/slack`, share))).toBe(200)
    expect(await stored('slack', `T123ABC456:C123ABC456:${ts}`)).toEqual([
      { body: 'see the scan', attachments: [media.SLACK_FILE_ATTACHMENT] },
    ])

    const sid = `SM${uniq()}`
    const mediaSid = 'ME0123456789abcdef0123456789abcdef'
    const mms = media.twilioMediaParams([['audio/ogg', media.twilioMediaUrl(mediaSid)]], {
      messageSid: sid,
      body: '',
    })
    expect(await send(await twilioRequest(`${worker.url}/webhooks/twilio`, mms))).toBe(200)
    expect(await stored('whatsapp', `${ACCOUNT}:${sid}`)).toEqual([
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
