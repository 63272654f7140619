/**
 * The spool end to end: the deployable Worker bundle in Miniflare with its Cloudflare Queues (the
 * spool and its dead letters, consumed by the same Worker), the real origin as a process (killed
 * and restarted) behind a balancer that can also play a WAF refusing one message, real Postgres
 * through the Neon proxy, real Redis through the Upstash stand-in, and a downstream server the
 * origin's outbox relay hands rows to. The assertions are on rows, Redis keys and hand-offs.
 *
 * The queue's retry schedule is compressed (SPOOL_RETRY_* of 1-2 s, 6 attempts); nothing
 * restarts the Worker, whose local queues live in memory.
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
import { type Balancer, startBalancer } from '../faults/support/balancer'
import { DONE_VALUE, SPOOLED_VALUE } from '../support/claim-values'
import { runFailuresCli } from '../support/origin'
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
import {
  META_IMAGE_MESSAGE,
  WA_TEST_SECRET,
  WA_VERIFY_TOKEN,
  waBatch,
  waRequest,
  waText,
} from '../unit/whatsapp-cloud-fixtures'
import { startDownstream, type TestDownstream } from './support/downstream'

const UPSTASH_TOKEN = `spool-e2e-${runId()}`
const KEY_PREFIX = `test:spool-e2e:${runId()}:`
const ACCOUNT = 'AC0123456789abcdef0123456789abcdef'
const MAX_ATTEMPTS = 6

let db: TestDatabase
let database: DatabaseLayer
let redisLayer: RedisLayer
let origin: OriginHandle
let balancer: Balancer
let worker: WorkerMiniflareHandle
let downstream: TestDownstream
let sql: pg.Pool
let redis: Redis

beforeAll(async () => {
  db = await createTestDatabase()
  ;[database, redisLayer, downstream] = await Promise.all([
    startDatabaseLayer({ databaseUrl: db.url, createDatabase: false }),
    startRedisLayer({ redisUrl: REDIS_URL, token: UPSTASH_TOKEN }),
    startDownstream(),
  ])
  origin = await startOrigin({
    env: {
      ...database.originEnv,
      ORIGIN_SHARED_SECRET: TEST_SECRETS.origin,
      LOG_LEVEL: 'warn',
      DOWNSTREAM_URL: `${downstream.url}/hooks/outbox`,
      OUTBOX_POLL_INTERVAL_MS: '100',
    },
  })
  balancer = await startBalancer([origin.url])
  worker = await startWorkerMiniflare({
    vars: {
      SLACK_SIGNING_SECRET: TEST_SECRETS.slack,
      TWILIO_AUTH_TOKEN: TEST_SECRETS.twilio,
      TELEGRAM_SECRET_TOKEN: TEST_SECRETS.telegram,
      TELEGRAM_BOT_ID: TEST_SECRETS.telegramBotId,
      WHATSAPP_APP_SECRET: WA_TEST_SECRET,
      WHATSAPP_VERIFY_TOKEN: WA_VERIFY_TOKEN,
      ORIGIN_SHARED_SECRET: TEST_SECRETS.origin,
      ORIGIN_URL: balancer.url,
      UPSTASH_REDIS_REST_URL: redisLayer.url,
      UPSTASH_REDIS_REST_TOKEN: UPSTASH_TOKEN,
      REDIS_KEY_PREFIX: KEY_PREFIX,
      SPOOL_RETRY_BASE_SECONDS: '1',
      SPOOL_RETRY_MAX_SECONDS: '2',
      SPOOL_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    },
    onLine: () => {},
  })
  sql = databasePool(db.url)
  redis = new Redis(REDIS_URL)
}, 180_000)

afterAll(async () => {
  await sql?.end()
  redis?.disconnect()
  await worker?.stop()
  await balancer?.close()
  await origin?.stop()
  await redisLayer?.stop()
  await downstream?.close()
  await database?.stop()
  await db?.drop()
  await deleteRedisPrefix(KEY_PREFIX)
})

const uniq = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`

interface Delivery {
  channel: string
  make: () => Promise<Request>
  messageKey: string
  deliveryKey: string
}

const DELIVERIES = {
  slack(text?: string): Delivery {
    const eventId = `Ev${uniq()}`
    const ts = `${Math.floor(Date.now() / 1000)}.${Math.floor(Math.random() * 1e6)}`
    return {
      channel: 'slack',
      make: () =>
        slackRequest(`${worker.url}/webhooks/slack`, slackMessageEvent({ eventId, ts, text })),
      messageKey: `T123ABC456:C123ABC456:${ts}`,
      deliveryKey: `dedup:slack:A123ABC456:${eventId}`,
    }
  },
  whatsapp(): Delivery {
    const sid = `SM${uniq()}`
    return {
      channel: 'whatsapp',
      make: () => twilioRequest(`${worker.url}/webhooks/twilio`, twilioParams({ messageSid: sid })),
      messageKey: `${ACCOUNT}:${sid}`,
      deliveryKey: twilioDeliveryKey('wa', sid),
    }
  },
  telegram(): Delivery {
    const updateId = Math.floor(Math.random() * 2 ** 31)
    const chatId = Math.floor(Math.random() * 2 ** 40)
    return {
      channel: 'telegram',
      make: async () =>
        telegramRequest(
          `${worker.url}/webhooks/telegram`,
          telegramUpdate({ updateId, chatId, messageId: 7 }),
        ),
      messageKey: `${TEST_SECRETS.telegramBotId}:${chatId}:7`,
      deliveryKey: `dedup:telegram:${TEST_SECRETS.telegramBotId}:${updateId}`,
    }
  },
}

const fresh = (): Delivery[] => [DELIVERIES.slack(), DELIVERIES.whatsapp(), DELIVERIES.telegram()]

async function send(request: Request): Promise<number> {
  const response = await fetch(request)
  await response.arrayBuffer()
  return response.status
}

async function messageRows(d: Delivery): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM messages WHERE channel = $1 AND channel_message_id = $2',
    [d.channel, d.messageKey],
  )
  return rows[0]?.n ?? 0
}

async function outboxOf(d: Delivery): Promise<Array<{ id: string; processed: boolean }>> {
  const { rows } = await sql.query<{ id: string; processed: boolean }>(
    `SELECT o.id::text, o.processed_at IS NOT NULL AS processed
       FROM outbox o JOIN messages m ON m.id = o.message_id
      WHERE m.channel = $1 AND m.channel_message_id = $2`,
    [d.channel, d.messageKey],
  )
  return rows
}

const claim = (d: Delivery) => redis.get(KEY_PREFIX + d.deliveryKey)

/** Polls (bounded) until `check` holds: the queue consumer and the relay run on their own. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

const allLanded = (deliveries: Delivery[]) => async () =>
  (await Promise.all(deliveries.map(messageRows))).every((n) => n === 1)

describe('the origin down', () => {
  it('every channel is answered ok and queued; after the restart one row each, handed downstream once', async () => {
    const deliveries = fresh()
    await origin.kill('SIGKILL')
    try {
      for (const d of deliveries) {
        expect(await send(await d.make())).toBe(200)
        expect(await send(await d.make())).toBe(200)
      }
      for (const d of deliveries) expect(await claim(d)).toMatch(SPOOLED_VALUE)
      for (const d of deliveries) expect(await messageRows(d)).toBe(0)
    } finally {
      await origin.restart()
    }

    await eventually(allLanded(deliveries))
    await eventually(async () =>
      (await Promise.all(deliveries.map(claim))).every((v) => DONE_VALUE.test(v ?? '')),
    )
    for (const d of deliveries) {
      expect(await outboxOf(d)).toHaveLength(1)
      // A vendor replay afterwards: still one row.
      expect(await send(await d.make())).toBe(200)
      expect(await messageRows(d)).toBe(1)
    }
    const outboxIds = (await Promise.all(deliveries.map(outboxOf))).flat().map((o) => o.id)
    await eventually(async () =>
      (await Promise.all(deliveries.map(outboxOf))).flat().every((o) => o.processed),
    )
    const delivered = downstream.deliveredByKey()
    for (const id of outboxIds) expect(delivered.get(`outbox-${id}`)).toBe(1)
  }, 120_000)
})

describe('Redis down as well', () => {
  it('every channel (Twilio too) is answered ok and queued; one row each once both are back', async () => {
    const deliveries = fresh()
    const port = redisLayer.port
    await origin.kill('SIGKILL')
    await redisLayer.stop()
    try {
      for (const d of deliveries) expect(await send(await d.make())).toBe(200)
    } finally {
      redisLayer = await startRedisLayer({ redisUrl: REDIS_URL, token: UPSTASH_TOKEN, port })
      await origin.restart()
    }
    await eventually(allLanded(deliveries))
    for (const d of deliveries) expect(await outboxOf(d)).toHaveLength(1)
  }, 120_000)
})

describe('Redis flushed during an origin outage', () => {
  it('every queued event still lands once, a vendor retry after the flush included', async () => {
    const deliveries = fresh()
    await origin.kill('SIGKILL')
    try {
      for (const d of deliveries) expect(await send(await d.make())).toBe(200)
      await deleteRedisPrefix(KEY_PREFIX)
      for (const d of deliveries) expect(await claim(d)).toBeNull()
      // Slack retries after the flush: a fresh claim, queued a second time.
      expect(await send(await (deliveries[0] as Delivery).make())).toBe(200)
    } finally {
      await origin.restart()
    }
    await eventually(allLanded(deliveries))
    await new Promise((r) => setTimeout(r, 2_000))
    for (const d of deliveries) {
      expect(await messageRows(d)).toBe(1)
      expect(await outboxOf(d)).toHaveLength(1)
    }
  }, 120_000)
})

describe('a poisoned event among good ones', () => {
  it('the 20 land; the poisoned one ends in channel_failures after its retries; its replay after the fix lands once', async () => {
    const marker = `POISON-${uniq()}`
    const good = Array.from({ length: 20 }, () => DELIVERIES.slack())
    const poisoned = DELIVERIES.slack(`this text trips the WAF ${marker}`)
    balancer.setPoison({ marker, status: 403, path: '/v1/events' })
    try {
      const all = [...good.slice(0, 10), poisoned, ...good.slice(10)]
      for (const d of all) expect(await send(await d.make())).toBe(200)

      await eventually(allLanded(good), 30_000)
      expect(await messageRows(poisoned)).toBe(0)

      const failure = async () => {
        const { rows } = await sql.query<{ id: string; attempts: number; error: string }>(
          `SELECT id::text, attempts, error FROM channel_failures
            WHERE stage = 'inbound' AND source = 'queue' AND status = 'dead'
              AND delivery_key = $1`,
          [poisoned.deliveryKey],
        )
        return rows[0]
      }
      await eventually(async () => (await failure()) !== undefined, 60_000)
      const dead = await failure()
      expect(dead?.attempts).toBe(MAX_ATTEMPTS)
      expect(dead?.error).toBe('origin 403')
      expect(await messageRows(poisoned)).toBe(0)

      // The operator fixes the WAF rule, then replays the dead event.
      balancer.setPoison(null)
      const replay = await runFailuresCli(
        { databaseUrl: db.url, wsProxy: database.originEnv.NEON_WS_PROXY as string },
        ['replay', dead?.id as string],
        { DOWNSTREAM_URL: '' },
      )
      expect(replay.code).toBe(0)
      expect(await messageRows(poisoned)).toBe(1)
      for (const d of good) expect(await messageRows(d)).toBe(1)
    } finally {
      balancer.setPoison(null)
    }
  }, 150_000)
})

describe('WhatsApp Cloud batches, end to end (real origin and Postgres)', () => {
  /** `count` messages of one Meta POST over two phone numbers, as deliveries of their own. */
  function waMessages(count: number): Delivery[] {
    return Array.from({ length: count }, (_, i) => {
      const number = i % 2 === 0 ? '1001' : '2002'
      const wamid = `wamid.${uniq()}${uniq()}`
      return {
        channel: 'whatsapp',
        make: () => Promise.reject(new Error('part of a batch')),
        messageKey: `${number}:${wamid}`,
        deliveryKey: `dedup:wa-cloud:${number}:${wamid}`,
      }
    })
  }
  const batchOf = (messages: Delivery[], extra: Record<string, unknown>[] = []) => {
    const parts = messages.map((d) => d.messageKey.split(':') as [string, string])
    return waBatch(
      ['1001', '2002'].map((phoneNumberId) => ({
        phoneNumberId,
        messages: [
          ...parts.filter(([n]) => n === phoneNumberId).map(([, id]) => waText(id, `text ${id}`)),
          ...(phoneNumberId === '1001' ? extra : []),
        ],
      })),
    )
  }
  const post = async (body: Record<string, unknown>) =>
    send(await waRequest(`${worker.url}/webhooks/whatsapp-cloud`, body))

  it('3 messages on 2 numbers, replayed: 3 rows; a batch overlapping it adds only the new one', async () => {
    const three = waMessages(3)
    expect(await post(batchOf(three))).toBe(200)
    expect(await post(batchOf(three))).toBe(200)
    for (const d of three) expect(await messageRows(d)).toBe(1)
    const [fourth] = waMessages(1) as [Delivery]
    expect(await post(batchOf([...three.slice(1), fourth]))).toBe(200)
    for (const d of [...three, fourth]) {
      expect(await messageRows(d)).toBe(1)
      expect(await outboxOf(d)).toHaveLength(1)
    }
  }, 60_000)

  it('20 concurrent copies of a two-message batch leave two rows', async () => {
    const two = waMessages(2)
    const body = batchOf(two)
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(body)))
    expect(answers.filter((s) => s === 200).length).toBeGreaterThan(0)
    // Meta resends what was not answered 200.
    expect(await post(body)).toBe(200)
    for (const d of two) {
      expect(await messageRows(d)).toBe(1)
      expect(await outboxOf(d)).toHaveLength(1)
    }
  }, 60_000)

  it('a batch during an origin outage: answered 200, queued, lands once; the media as attachments', async () => {
    const two = waMessages(2)
    const imageId = `wamid.${uniq()}${uniq()}`
    const image: Delivery = {
      channel: 'whatsapp',
      make: () => Promise.reject(new Error('part of a batch')),
      messageKey: `1001:${imageId}`,
      deliveryKey: `dedup:wa-cloud:1001:${imageId}`,
    }
    const body = batchOf(two, [{ ...META_IMAGE_MESSAGE, id: imageId }])
    await origin.kill('SIGKILL')
    try {
      expect(await post(body)).toBe(200)
      expect(await post(body)).toBe(200)
      for (const d of [...two, image]) expect(await claim(d)).toMatch(SPOOLED_VALUE)
    } finally {
      await origin.restart()
    }
    await eventually(allLanded([...two, image]))
    expect(await post(body)).toBe(200)
    for (const d of [...two, image]) expect(await outboxOf(d)).toHaveLength(1)
    const { rows } = await sql.query<{ body: string; attachments: unknown }>(
      'SELECT body, attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
      ['whatsapp', image.messageKey],
    )
    expect(rows).toEqual([
      {
        body: 'Taj Mahal',
        attachments: [expect.objectContaining({ kind: 'image', mediaId: '1003383421387256' })],
      },
    ])
  }, 120_000)
})
