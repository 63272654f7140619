/**
 * The WhatsApp Cloud channel through the real Worker routes, inside workerd, with real Redis (the
 * Upstash stand-in), the test origin, and signatures made with Meta's documented algorithm over
 * payloads shaped like its examples: the handshake, signatures (nothing written when they fail),
 * batches (replayed, partly overlapping, concurrent copies), statuses, attachments, the origin
 * down, and several apps each verifying only its own phone numbers.
 */

import { describe, expect, it } from 'vitest'
import {
  randomId,
  WA_TEST_SECRET,
  WA_VERIFY_TOKEN,
  waBatch,
  waRequest,
  waText,
} from '../../../local/vendor-deliveries'
import { whatsappSignature } from '../../../worker/channels/whatsapp-cloud'
import type { Env } from '../../../worker/env'
import type { SpoolMessage } from '../../../worker/spool/message'
import { DONE_VALUE, SPOOLED_VALUE } from '../../support/claim-values'
import { GATEWAY, type Harness, harness } from '../../support/workerd/harness'
import { RecordingQueue } from '../../support/workerd/queues'
import { nothingWritten } from '../support/workerd'
import { META_IMAGE_MESSAGE, META_SENT_STATUS, WA_VECTORS } from './whatsapp-cloud-fixtures'

const URL_ = `${GATEWAY}/webhooks/whatsapp-cloud`
const WA: Partial<Env> = {
  WHATSAPP_APP_SECRET: WA_TEST_SECRET,
  WHATSAPP_VERIFY_TOKEN: WA_VERIFY_TOKEN,
}
const wamid = () => `wamid.HBgL${randomId()}${randomId()}AA==`

/** The origin got `n` events, and holds `n` rows: one per message. */
async function expectForwarded(h: Harness, n: number): Promise<void> {
  const { calls, rows } = await h.originCalls()
  expect(rows).toBe(n)
  expect(calls).toHaveLength(n)
}

/** Three messages on two phone numbers, as one POST. */
function threeOnTwo() {
  const [a, b, c] = [wamid(), wamid(), wamid()]
  const body = waBatch([
    { phoneNumberId: '1001', messages: [waText(a, 'one'), waText(b, 'two')] },
    { phoneNumberId: '2002', messages: [waText(c, 'three')] },
  ])
  const keys = [`dedup:wa-cloud:1001:${a}`, `dedup:wa-cloud:1001:${b}`, `dedup:wa-cloud:2002:${c}`]
  return { body, keys, ids: [a, b, c] as const }
}

describe('WhatsApp Cloud: the documented signature vectors in workerd', () => {
  it.each(WA_VECTORS)('vector %s', async (_name, secret, body, expected) => {
    expect(await whatsappSignature(secret, body)).toBe(expected)
  })
})

describe('WhatsApp Cloud: the GET handshake', () => {
  const get = (h: Harness, query: string) => h.deliver(new Request(`${URL_}?${query}`))

  it('answers 200 with hub.challenge as the plain body for the configured verify token', async () => {
    const h = harness(WA)
    const response = await get(
      h,
      `hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=${WA_VERIFY_TOKEN}`,
    )
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/)
    expect(await response.text()).toBe('1158201444')
  })

  it('anything else is 403, without echoing anything', async () => {
    const h = harness(WA)
    for (const query of [
      'hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=wrong',
      `hub.mode=unsubscribe&hub.challenge=1158201444&hub.verify_token=${WA_VERIFY_TOKEN}`,
      'hub.challenge=1158201444',
      '',
    ]) {
      const response = await get(h, query)
      expect(response.status).toBe(403)
      expect(await response.text()).not.toContain('1158201444')
    }
  })

  it('without the channel configured: 503 naming nothing secret', async () => {
    const h = harness({ WHATSAPP_APP_SECRET: '', WHATSAPP_VERIFY_TOKEN: '' })
    const response = await get(h, 'hub.mode=subscribe&hub.challenge=1&hub.verify_token=x')
    expect(response.status).toBe(503)
    expect(await response.json()).toEqual({
      error: {
        code: 'channel_not_configured',
        message: 'channel whatsapp-cloud is not configured',
      },
    })
  })
})

describe('WhatsApp Cloud: signatures', () => {
  it('a bad or missing X-Hub-Signature-256 is 401 and writes nothing', async () => {
    const h = harness(WA)
    const { body } = threeOnTwo()
    const forged = await waRequest(URL_, body, 'not-the-app-secret')
    expect((await h.deliver(forged)).status).toBe(401)
    const unsigned = new Request(URL_, { method: 'POST', body: JSON.stringify(body) })
    expect((await h.deliver(unsigned)).status).toBe(401)
    // Signed, then one byte changed.
    const good = await waRequest(URL_, body)
    const tampered = new Request(URL_, {
      method: 'POST',
      headers: good.headers,
      body: (await good.text()).replace('one', 'uno'),
    })
    expect((await h.deliver(tampered)).status).toBe(401)
    await nothingWritten(h)
  })
})

describe('WhatsApp Cloud: batches', () => {
  it('3 messages on 2 numbers, replayed: 3 rows, the replay answered from Redis', async () => {
    const h = harness(WA)
    const { body, keys } = threeOnTwo()
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    const { calls, rows } = await h.originCalls()
    expect(rows).toBe(3)
    expect(calls.map((c) => c.deliveryKey).sort()).toEqual([...keys].sort())
    for (const key of keys) {
      expect(await h.redisGet(key)).toMatch(DONE_VALUE)
      // The channel's own TTL: Meta retries for up to 7 days.
      expect(await h.redisTtl(key)).toBeGreaterThan(7 * 86_400)
    }
  })

  it('a batch where one message is already stored adds only the others', async () => {
    const h = harness(WA)
    const { body, ids } = threeOnTwo()
    const first = waBatch([{ phoneNumberId: '1001', messages: [waText(ids[0], 'one')] }])
    expect((await h.deliver(await waRequest(URL_, first))).status).toBe(200)
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    await expectForwarded(h, 3)
  })

  it('20 concurrent copies of a two-message batch leave two rows', async () => {
    const h = harness(WA)
    const [a, b] = [wamid(), wamid()]
    const body = waBatch([
      { phoneNumberId: '1001', messages: [waText(a, 'one')] },
      { phoneNumberId: '2002', messages: [waText(b, 'two')] },
    ])
    const answers = await Promise.all(
      Array.from({ length: 20 }, async () => (await h.deliver(await waRequest(URL_, body))).status),
    )
    // A copy that met a claim still in flight asks Meta to retry (never a 200 hiding a failure).
    expect(answers.every((s) => s === 200 || s === 503)).toBe(true)
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(2)
  })

  it('one message not taken: Meta retries the POST, and the retry adds only it', async () => {
    const h = harness(WA)
    const { body, keys } = threeOnTwo()
    await h.redis.set(h.redisKey(keys[2] as string), 'inflight|other|0000000000000000', {
      px: 2_500,
    })
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(503)
    expect((await h.originCalls()).rows).toBe(2)
    await h.redis.del(h.redisKey(keys[2] as string))
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    await expectForwarded(h, 3)
  })

  it('statuses are acknowledged in their own namespace and never forwarded', async () => {
    const h = harness(WA)
    const id = wamid()
    const body = waBatch([
      {
        phoneNumberId: '1001',
        statuses: [
          { ...META_SENT_STATUS, id },
          { ...META_SENT_STATUS, id, status: 'read' },
        ],
      },
    ])
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(0)
    expect(await h.redisGet(`dedup:wa-cloud-status:1001:${id}:sent`)).toMatch(DONE_VALUE)
    expect(await h.redisGet(`dedup:wa-cloud-status:1001:${id}:read`)).toMatch(DONE_VALUE)
    // An inbound message with the same wamid is not swallowed by its status.
    const message = waBatch([{ phoneNumberId: '1001', messages: [waText(id, 'hello')] }])
    expect((await h.deliver(await waRequest(URL_, message))).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(1)
  })

  it("Meta's image example: the caption is the body, the media the event's attachment", async () => {
    const spool = new RecordingQueue<SpoolMessage>()
    const h = harness({ ...WA, SPOOL: spool as unknown as Env['SPOOL'] })
    // The origin down: the queued event shows exactly what would have been forwarded.
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const body = waBatch([
      { phoneNumberId: '1001', messages: [{ ...META_IMAGE_MESSAGE, id: wamid() }] },
    ])
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    expect(spool.sent[0]?.event).toMatchObject({
      channel: 'whatsapp',
      body: 'Taj Mahal',
      attachments: [{ kind: 'image', mediaId: '1003383421387256', mimeType: 'image/jpeg' }],
    })
  })

  it('a batch during an origin outage: every message queued, answered 200, a replay queues nothing more', async () => {
    const spool = new RecordingQueue<SpoolMessage>()
    const h = harness({ ...WA, SPOOL: spool as unknown as Env['SPOOL'] })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const { body, keys } = threeOnTwo()
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    expect(spool.sent.map((m) => m.claimKey).sort()).toEqual([...keys].sort())
    expect(spool.sent.every((m) => m.ttlSeconds === 8 * 86_400)).toBe(true)
    for (const key of keys) expect(await h.redisGet(key)).toMatch(SPOOLED_VALUE)
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(200)
    expect(spool.sent).toHaveLength(3)
  })

  it('the queue refusing too: 503, so that Meta retries the whole batch', async () => {
    const h = harness({
      ...WA,
      SPOOL: { send: async () => Promise.reject(new Error('down')) } as unknown as Env['SPOOL'],
    })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const { body, keys } = threeOnTwo()
    expect((await h.deliver(await waRequest(URL_, body))).status).toBe(503)
    for (const key of keys) expect(await h.redisGet(key)).toBeNull()
  })
})

describe('WhatsApp Cloud: several apps', () => {
  const apps = (): Harness =>
    harness({
      WHATSAPP_APP_SECRET: '',
      WHATSAPP_VERIFY_TOKEN: WA_VERIFY_TOKEN,
      WHATSAPP_APP_SECRETS_BY_APP: '111=app-one-new|app-one-old,222=app-two',
      WHATSAPP_PHONE_NUMBERS_BY_APP: '111=1001|1002,222=2001',
    })

  it("each app's secrets, rotation included, verify its own phone numbers' messages", async () => {
    const h = apps()
    const one = waBatch([{ phoneNumberId: '1002', messages: [waText(wamid(), 'x')] }])
    expect((await h.deliver(await waRequest(URL_, one, 'app-one-old'))).status).toBe(200)
    const two = waBatch([{ phoneNumberId: '2001', messages: [waText(wamid(), 'y')] }])
    expect((await h.deliver(await waRequest(URL_, two, 'app-two'))).status).toBe(200)
    expect((await h.originCalls()).rows).toBe(2)
  })

  it("a message for another app's number (or a number no app lists) is 401, and nothing of the batch is written", async () => {
    const h = apps()
    const mixed = waBatch([
      { phoneNumberId: '1001', messages: [waText(wamid(), 'mine')] },
      { phoneNumberId: '2001', messages: [waText(wamid(), "app two's")] },
    ])
    expect((await h.deliver(await waRequest(URL_, mixed, 'app-one-new'))).status).toBe(401)
    const unlisted = waBatch([{ phoneNumberId: '9999', messages: [waText(wamid(), 'z')] }])
    expect((await h.deliver(await waRequest(URL_, unlisted, 'app-two'))).status).toBe(401)
    await nothingWritten(h)
  })
})
