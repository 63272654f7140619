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
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { LIMITS } from '../../contract/event'
import { deleteRedisPrefix, runId } from '../../local/services'
import {
  randomId,
  type SignedDelivery,
  slackDelivery,
  telegramDelivery,
  twilioDelivery,
  waBatch,
  waRequest,
  waText,
} from '../../local/vendor-deliveries'
import { META_IMAGE_MESSAGE } from '../channels/whatsapp-cloud/whatsapp-cloud-fixtures'
import { DONE_VALUE, SPOOLED_VALUE } from '../support/claim-values'
import { startDownstream, type TestDownstream } from '../support/downstream'
import { runFailuresCli } from '../support/origin'
import {
  eventually,
  type RowKey,
  send,
  startTestStack,
  type TestStack,
} from '../support/test-stack'

const MAX_ATTEMPTS = 6

let downstream: TestDownstream
let e2e: TestStack

beforeAll(async () => {
  downstream = await startDownstream()
  e2e = await startTestStack('spool-e2e', {
    originEnv: { DOWNSTREAM_URL: `${downstream.url}/hooks/outbox`, OUTBOX_POLL_INTERVAL_MS: '100' },
    balancer: true,
    workerVars: {
      SPOOL_RETRY_BASE_SECONDS: '1',
      SPOOL_RETRY_MAX_SECONDS: '2',
      SPOOL_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
    },
    onWorkerLine: () => {},
  })
}, 180_000)

afterAll(async () => {
  await e2e?.stop()
  await downstream?.close()
})

const fresh = (): SignedDelivery[] => [
  slackDelivery(),
  twilioDelivery(),
  telegramDelivery({ messageId: 7 }),
]
/** Where a message's row and claim are: a fixture's delivery, or one message of a batch. */
type Keys = RowKey & { deliveryKey: string }

const deliver = (d: SignedDelivery) => e2e.deliver(d)
const rows = (d: RowKey) => e2e.rows(d)
const outboxOf = (d: RowKey) => e2e.outbox(d)
const claim = (d: Keys) => e2e.claim(d)

const allLanded = (deliveries: RowKey[]) => async () =>
  (await Promise.all(deliveries.map(rows))).every((n) => n === 1)

describe('the origin down', () => {
  it('every channel is answered ok and queued; after the restart one row each, handed downstream once', async () => {
    const deliveries = fresh()
    await e2e.stack.origin.kill('SIGKILL')
    try {
      for (const d of deliveries) {
        expect(await deliver(d)).toBe(200)
        expect(await deliver(d)).toBe(200)
      }
      for (const d of deliveries) expect(await claim(d)).toMatch(SPOOLED_VALUE)
      for (const d of deliveries) expect(await rows(d)).toBe(0)
    } finally {
      await e2e.stack.origin.restart()
    }

    await eventually(allLanded(deliveries))
    await eventually(async () =>
      (await Promise.all(deliveries.map(claim))).every((v) => DONE_VALUE.test(v ?? '')),
    )
    for (const d of deliveries) {
      expect(await outboxOf(d)).toHaveLength(1)
      // A vendor replay afterwards: still one row.
      expect(await deliver(d)).toBe(200)
      expect(await rows(d)).toBe(1)
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
    await e2e.stack.origin.kill('SIGKILL')
    await e2e.stack.redis.stop()
    try {
      for (const d of deliveries) expect(await deliver(d)).toBe(200)
    } finally {
      await e2e.stack.redis.start()
      await e2e.stack.origin.restart()
    }
    await eventually(allLanded(deliveries))
    for (const d of deliveries) expect(await outboxOf(d)).toHaveLength(1)
  }, 120_000)
})

describe('Redis flushed during an origin outage', () => {
  it('every queued event still lands once, a vendor retry after the flush included', async () => {
    const deliveries = fresh()
    await e2e.stack.origin.kill('SIGKILL')
    try {
      for (const d of deliveries) expect(await deliver(d)).toBe(200)
      await deleteRedisPrefix(e2e.stack.keyPrefix as string)
      for (const d of deliveries) expect(await claim(d)).toBeNull()
      // Slack retries after the flush: a fresh claim, queued a second time.
      expect(await deliver(deliveries[0] as SignedDelivery)).toBe(200)
    } finally {
      await e2e.stack.origin.restart()
    }
    await eventually(allLanded(deliveries))
    await new Promise((r) => setTimeout(r, 2_000))
    for (const d of deliveries) {
      expect(await rows(d)).toBe(1)
      expect(await outboxOf(d)).toHaveLength(1)
    }
  }, 120_000)
})

describe('a poisoned event among good ones', () => {
  it('the 20 land; the poisoned one ends in channel_failures after its retries; its replay after the fix lands once', async () => {
    const marker = `POISON-${runId()}`
    const good = Array.from({ length: 20 }, () => slackDelivery())
    const poisoned = slackDelivery({ text: `this text trips the WAF ${marker}` })
    e2e.stack.balancer?.setPoison({ marker, status: 403, path: '/v1/events' })
    try {
      const all = [...good.slice(0, 10), poisoned, ...good.slice(10)]
      for (const d of all) expect(await deliver(d)).toBe(200)

      await eventually(allLanded(good), 30_000)
      expect(await rows(poisoned)).toBe(0)

      const failure = async () => {
        const { rows } = await e2e.stack.sql.query<{ id: string; attempts: number; error: string }>(
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
      expect(await rows(poisoned)).toBe(0)

      // The operator fixes the WAF rule, then replays the dead event.
      e2e.stack.balancer?.setPoison(null)
      const replay = await runFailuresCli(
        { databaseUrl: e2e.stack.database.databaseUrl, wsProxy: e2e.stack.database.neonWsProxy },
        ['replay', dead?.id as string],
        { DOWNSTREAM_URL: '' },
      )
      expect(replay.code).toBe(0)
      expect(await rows(poisoned)).toBe(1)
      for (const d of good) expect(await rows(d)).toBe(1)
    } finally {
      e2e.stack.balancer?.setPoison(null)
    }
  }, 150_000)
})

describe('the largest Slack message, over a queue message (the R2 claim check)', () => {
  /** The claim check's objects left in the Worker's R2 bucket. */
  const objects = async () => {
    const worker = e2e.stack.worker
    if (worker.runtime !== 'miniflare') throw new Error('the spool e2e runs on Miniflare')
    const bucket = await worker.miniflare.getR2Bucket('SPOOL_BODIES')
    return (await bucket.list({ prefix: 'spool/' })).objects.map((o) => o.key)
  }
  const storedBody = async (d: RowKey) => {
    const { rows } = await e2e.stack.sql.query<{ body: string }>(
      'SELECT body FROM messages WHERE channel = $1 AND channel_message_id = $2',
      [d.channel, d.messageKey],
    )
    return rows.map((r) => r.body)
  }
  // The text at its bound in 3-byte characters: about 197 KB, over a queue message (120,000 bytes).
  const text = (prefix = '') => `${prefix}${'中'.repeat(LIMITS.body - prefix.length)}`

  it('origin down: answered ok, queued through R2, lands once, and its object is deleted', async () => {
    const big = slackDelivery({ text: text() })
    await e2e.stack.origin.kill('SIGKILL')
    try {
      expect(await deliver(big)).toBe(200)
      expect(await claim(big)).toMatch(SPOOLED_VALUE)
      expect(await objects()).toHaveLength(1)
    } finally {
      await e2e.stack.origin.restart()
    }
    await eventually(allLanded([big]))
    expect(await storedBody(big)).toEqual([text()])
    await eventually(async () => (await objects()).length === 0)
    expect(await deliver(big)).toBe(200)
    expect(await rows(big)).toBe(1)
  }, 120_000)

  it('refused for good: recorded whole in channel_failures, replayed once the cause is fixed', async () => {
    const marker = `POISON-${runId()}`
    const big = slackDelivery({ text: text(marker) })
    e2e.stack.balancer?.setPoison({ marker, status: 403, path: '/v1/events' })
    try {
      expect(await deliver(big)).toBe(200)
      const failure = async () => {
        const { rows } = await e2e.stack.sql.query<{ id: string; body: string }>(
          `SELECT id::text, event->>'body' AS body FROM channel_failures
            WHERE stage = 'inbound' AND status = 'dead' AND delivery_key = $1`,
          [big.deliveryKey],
        )
        return rows[0]
      }
      await eventually(async () => (await failure()) !== undefined, 60_000)
      const dead = await failure()
      expect(dead?.body).toBe(text(marker))
      await eventually(async () => (await objects()).length === 0)

      e2e.stack.balancer?.setPoison(null)
      const replay = await runFailuresCli(
        { databaseUrl: e2e.stack.database.databaseUrl, wsProxy: e2e.stack.database.neonWsProxy },
        ['replay', dead?.id as string],
        { DOWNSTREAM_URL: '' },
      )
      expect(replay.code).toBe(0)
      expect(await storedBody(big)).toEqual([text(marker)])
    } finally {
      e2e.stack.balancer?.setPoison(null)
    }
  }, 150_000)
})

describe('WhatsApp Cloud batches, end to end (real origin and Postgres)', () => {
  /** `count` messages of one Meta POST over two phone numbers, as deliveries of their own. */
  function waMessages(count: number): Keys[] {
    return Array.from({ length: count }, (_, i) => waMessage(i % 2 === 0 ? '1001' : '2002'))
  }
  function waMessage(number: string, wamid = `wamid.${randomId()}${randomId()}`): Keys {
    return {
      channel: 'whatsapp',
      messageKey: `${number}:${wamid}`,
      deliveryKey: `dedup:wa-cloud:${number}:${wamid}`,
    }
  }
  const batchOf = (messages: Keys[], extra: Record<string, unknown>[] = []) => {
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
    send(await waRequest(`${e2e.stack.worker.url}/webhooks/whatsapp-cloud`, body))

  it('3 messages on 2 numbers, replayed: 3 rows; a batch overlapping it adds only the new one', async () => {
    const three = waMessages(3)
    expect(await post(batchOf(three))).toBe(200)
    expect(await post(batchOf(three))).toBe(200)
    for (const d of three) expect(await rows(d)).toBe(1)
    const [fourth] = waMessages(1) as [Keys]
    expect(await post(batchOf([...three.slice(1), fourth]))).toBe(200)
    for (const d of [...three, fourth]) {
      expect(await rows(d)).toBe(1)
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
      expect(await rows(d)).toBe(1)
      expect(await outboxOf(d)).toHaveLength(1)
    }
  }, 60_000)

  it('a batch during an origin outage: answered 200, queued, lands once; the media as attachments', async () => {
    const two = waMessages(2)
    const image = waMessage('1001')
    const imageId = image.messageKey.slice('1001:'.length)
    const body = batchOf(two, [{ ...META_IMAGE_MESSAGE, id: imageId }])
    await e2e.stack.origin.kill('SIGKILL')
    try {
      expect(await post(body)).toBe(200)
      expect(await post(body)).toBe(200)
      for (const d of [...two, image]) expect(await claim(d)).toMatch(SPOOLED_VALUE)
    } finally {
      await e2e.stack.origin.restart()
    }
    await eventually(allLanded([...two, image]))
    expect(await post(body)).toBe(200)
    for (const d of [...two, image]) expect(await outboxOf(d)).toHaveLength(1)
    const { rows: stored } = await e2e.stack.sql.query<{ body: string; attachments: unknown }>(
      'SELECT body, attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
      ['whatsapp', image.messageKey],
    )
    expect(stored).toEqual([
      {
        body: 'Taj Mahal',
        attachments: [expect.objectContaining({ kind: 'image', mediaId: '1003383421387256' })],
      },
    ])
  }, 120_000)
})

describe.each([
  ['an SSO wall (302 to a login page that answers 200)', 'redirect'],
  ['a proxy answering 200 with its own HTML page', 'html'],
] as const)('the origin behind %s', (_name, wall) => {
  it('every channel is answered ok and queued, nothing taken for stored; once the path is fixed, one row each', async () => {
    const deliveries = fresh()
    const balancer = e2e.stack.balancer
    if (!balancer) throw new Error('the stack has no balancer')
    const before = balancer.wallHits()
    balancer.setWall(wall)
    try {
      for (const d of deliveries) expect(await deliver(d)).toBe(200)
      for (const d of deliveries) expect(await claim(d)).toMatch(SPOOLED_VALUE)
      // The queue's consumer meets the wall too, and keeps the events.
      await eventually(async () => balancer.wallHits().walled - before.walled > deliveries.length)
      for (const d of deliveries) {
        expect(await claim(d)).toMatch(SPOOLED_VALUE)
        expect(await rows(d)).toBe(0)
      }
      // No redirect was followed: nobody asked for the login page.
      expect(balancer.wallHits().login).toBe(before.login)
    } finally {
      balancer.setWall(null)
    }
    await eventually(allLanded(deliveries))
    await eventually(async () =>
      (await Promise.all(deliveries.map(claim))).every((v) => DONE_VALUE.test(v ?? '')),
    )
    for (const d of deliveries) {
      expect(await deliver(d)).toBe(200)
      expect(await rows(d)).toBe(1)
    }
  }, 120_000)
})
