/**
 * The spool end to end: the deployable Worker bundle (Miniflare, cron via
 * /cdn-cgi/handler/scheduled), the real origin as a process (killed and restarted), real Postgres
 * through the Neon proxy, real Redis through the Upstash stand-in, and a downstream server the
 * origin's outbox relay hands rows to. The assertions are on rows, Redis keys and hand-offs.
 */
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
import {
  createTestDatabase,
  deleteRedisPrefix,
  REDIS_URL,
  runId,
  type TestDatabase,
} from '../support/services'
import {
  slackMessageEvent,
  slackRequest,
  TEST_SECRETS,
  telegramRequest,
  telegramUpdate,
  twilioParams,
  twilioRequest,
} from '../unit/signed-requests'
import { startDownstream, type TestDownstream } from './support/downstream'

const UPSTASH_TOKEN = `spool-e2e-${runId()}`
const KEY_PREFIX = `test:spool-e2e:${runId()}:`
const ACCOUNT = 'AC0123456789abcdef0123456789abcdef'

let db: TestDatabase
let database: DatabaseLayer
let redisLayer: RedisLayer
let origin: OriginHandle
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
    },
  })
  sql = new pg.Pool({ connectionString: db.url, max: 2 })
  redis = new Redis(REDIS_URL)
}, 180_000)

afterAll(async () => {
  await sql?.end()
  redis?.disconnect()
  await worker?.stop()
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

const DELIVERIES: Record<string, () => Delivery> = {
  slack() {
    const eventId = `Ev${uniq()}`
    const ts = `${Math.floor(Date.now() / 1000)}.${Math.floor(Math.random() * 1e6)}`
    return {
      channel: 'slack',
      make: () => slackRequest(`${worker.url}/webhooks/slack`, slackMessageEvent({ eventId, ts })),
      messageKey: `T123ABC456:C123ABC456:${ts}`,
      deliveryKey: `dedup:slack:A123ABC456:${eventId}`,
    }
  },
  whatsapp() {
    const sid = `SM${uniq()}`
    return {
      channel: 'whatsapp',
      make: () => twilioRequest(`${worker.url}/webhooks/twilio`, twilioParams({ messageSid: sid })),
      messageKey: `${ACCOUNT}:${sid}`,
      deliveryKey: `dedup:whatsapp:${ACCOUNT}:${sid}`,
    }
  },
  telegram() {
    const updateId = Math.floor(Math.random() * 2 ** 31)
    const chatId = Math.floor(Math.random() * 2 ** 40)
    return {
      channel: 'telegram',
      make: async () =>
        telegramRequest(
          `${worker.url}/webhooks/telegram`,
          telegramUpdate({ updateId, chatId, messageId: 7 }),
        ),
      messageKey: `${chatId}:7`,
      deliveryKey: `dedup:telegram:${TEST_SECRETS.telegramBotId}:${updateId}`,
    }
  },
}

const fresh = (): Delivery[] => Object.values(DELIVERIES).map((make) => make())

async function send(request: Request): Promise<number> {
  const response = await fetch(request)
  await response.arrayBuffer()
  return response.status
}

/** One cron run of the Worker, as the runtime (and `npm run dev`) triggers it. */
async function scheduled(): Promise<void> {
  const response = await fetch(`${worker.url}/cdn-cgi/handler/scheduled?cron=*+*+*+*+*`)
  await response.arrayBuffer()
  expect(response.status).toBe(200)
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

const spoolLength = (channel: string) => redis.llen(`${KEY_PREFIX}spool:${channel}`)
const claim = (d: Delivery) => redis.get(KEY_PREFIX + d.deliveryKey)

/** Polls (bounded) until `check` holds; the relay runs on its own schedule in the origin. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

describe('the origin down', () => {
  it('every channel is answered ok and spooled; the drain after the restart makes one row each, handed downstream once', async () => {
    const deliveries = fresh()
    await origin.kill('SIGKILL')
    try {
      for (const d of deliveries) {
        expect(await send(await d.make())).toBe(200)
        expect(await send(await d.make())).toBe(200)
      }
      for (const d of deliveries) {
        expect(await spoolLength(d.channel)).toBe(1)
        expect(await claim(d)).toMatch(/^spooled\|/)
      }
      // A cron run while the origin is still down keeps everything.
      await scheduled()
      for (const d of deliveries) expect(await spoolLength(d.channel)).toBe(1)
    } finally {
      await origin.restart()
    }

    await scheduled()

    for (const d of deliveries) {
      expect(await messageRows(d)).toBe(1)
      expect(await outboxOf(d)).toHaveLength(1)
      expect(await spoolLength(d.channel)).toBe(0)
      expect(await claim(d)).toMatch(/^done\|/)
      // A vendor replay after the drain: still one row.
      expect(await send(await d.make())).toBe(200)
      expect(await messageRows(d)).toBe(1)
    }
    // The restarted origin's relay hands each new outbox row downstream, once.
    const outboxIds = (await Promise.all(deliveries.map(outboxOf))).flat().map((o) => o.id)
    await eventually(async () =>
      (await Promise.all(deliveries.map(outboxOf))).flat().every((o) => o.processed),
    )
    const delivered = downstream.deliveredByKey()
    for (const id of outboxIds) expect(delivered.get(`outbox-${id}`)).toBe(1)
  }, 120_000)

  it('two cron runs at once drain each entry once: one row each', async () => {
    const deliveries = Array.from({ length: 6 }, () => DELIVERIES.slack?.() as Delivery)
    await origin.kill('SIGKILL')
    try {
      for (const d of deliveries) expect(await send(await d.make())).toBe(200)
      expect(await spoolLength('slack')).toBe(6)
    } finally {
      await origin.restart()
    }

    await Promise.all([scheduled(), scheduled()])

    for (const d of deliveries) {
      expect(await messageRows(d)).toBe(1)
      expect(await outboxOf(d)).toHaveLength(1)
    }
    expect(await spoolLength('slack')).toBe(0)
  }, 120_000)
})

describe('Redis down as well', () => {
  it('every channel gets the retry status (503); nothing is written; a retry after recovery is one row', async () => {
    const deliveries = fresh()
    const port = redisLayer.port
    await origin.kill('SIGKILL')
    await redisLayer.stop()
    try {
      for (const d of deliveries) expect(await send(await d.make())).toBe(503)
    } finally {
      redisLayer = await startRedisLayer({ redisUrl: REDIS_URL, token: UPSTASH_TOKEN, port })
      await origin.restart()
    }
    for (const d of deliveries) {
      expect(await messageRows(d)).toBe(0)
      expect(await claim(d)).toBeNull()
      expect(await spoolLength(d.channel)).toBe(0)
    }
    // Slack and Telegram send again on a 503 (Twilio does not: see the README's guarantees).
    for (const d of deliveries) expect(await send(await d.make())).toBe(200)
    for (const d of deliveries) expect(await messageRows(d)).toBe(1)
  }, 120_000)
})
