/**
 * The WeChat Official Accounts channel through the real Worker routes, inside workerd, with real
 * Redis (the Upstash stand-in) and the test origin: the official vectors and Tencent's encrypted
 * sample on workerd's Web Crypto, the GET handshake, signatures and foreign accounts (nothing
 * written), replays (each retry signed anew, as WeChat's are) and concurrent copies, plain and
 * encrypted, events, and the largest body.
 */
import { describe, expect, inject, it } from 'vitest'
import { DECISION_HEADER } from '../../../contract/decision-log'
import {
  nowSeconds,
  WECHAT_ACCOUNT,
  WECHAT_TEST_AES_KEY,
  WECHAT_TEST_APP_ID,
  WECHAT_TEST_TOKEN,
  wechatDelivery,
  wechatMsgId,
  wechatRequest,
  wechatText,
  wechatXml,
} from '../../../local/vendor-deliveries'
import { decryptWeChat, wechatSignature } from '../../../worker/channels/wechat-crypto'
import type { Env } from '../../../worker/env'
import { DONE_VALUE } from '../../support/claim-values'
import { GATEWAY, type Harness, harness } from '../../support/workerd/harness'
import { withQueues } from '../../support/workerd/queues'
import {
  TENCENT_SAMPLE,
  TENCENT_SAMPLE_BINDINGS,
  tencentSampleRequest,
  WECHAT_PLAIN_VECTORS,
} from './wechat-fixtures'

const OTHER = 'gh_ffffffffffff'
const URL_ = `${GATEWAY}/webhooks/wechat/${WECHAT_ACCOUNT}`
const OTHER_URL = `${GATEWAY}/webhooks/wechat/${OTHER}`
const PLAIN: Partial<Env> = {
  WECHAT_TOKENS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_TOKEN},${OTHER}=othertoken`,
}
const ENCRYPTED: Partial<Env> = {
  ...PLAIN,
  WECHAT_AES_KEYS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_AES_KEY}`,
  WECHAT_APP_IDS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_APP_ID}`,
}

/** The one-time claims of plain signatures (spent by a verified query, whatever its body). */
const SIGNATURE_CLAIMS = 'dedup:wechat-signature:'

/** No delivery claimed, nothing forwarded (a plain query's own claim aside). */
async function nothingWritten(h: Harness): Promise<void> {
  const keys = await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])
  expect(keys.filter((key) => !key.startsWith(h.redisKey(SIGNATURE_CLAIMS)))).toEqual([])
  expect((await h.originCalls()).calls).toHaveLength(0)
}

async function expectSuccess(response: Response): Promise<string | null> {
  expect(response.status).toBe(200)
  expect(await response.text()).toBe('success')
  return response.headers.get(DECISION_HEADER)
}

describe('WeChat: the official vectors in workerd', () => {
  it.each(WECHAT_PLAIN_VECTORS)('plain %s', async (_name, token, timestamp, nonce, expected) => {
    expect(await wechatSignature([token, timestamp, nonce])).toBe(expected)
  })

  it("Tencent's encrypted sample: msg_signature and decryption", async () => {
    const s = TENCENT_SAMPLE
    expect(await wechatSignature([s.token, s.timestamp, s.nonce, s.encrypt])).toBe(s.msgSignature)
    expect(await decryptWeChat(s.encrypt, s.encodingAesKey, s.appId)).toBe(s.message)
  })

  it("Tencent's sample through the route: its 2014 timestamp is outside the window, 401, nothing written", async () => {
    const h = harness(TENCENT_SAMPLE_BINDINGS)
    expect((await h.deliver(tencentSampleRequest(GATEWAY))).status).toBe(401)
    await nothingWritten(h)
  })
})

describe('WeChat: the GET handshake', () => {
  const get = async (url: string, token: string, timestamp = nowSeconds()) => {
    const nonce = '1514711492'
    const signature = await wechatSignature([token, String(timestamp), nonce])
    const query = new URLSearchParams({
      signature,
      timestamp: String(timestamp),
      nonce,
      echostr: '7016201484562382938',
    })
    return new Request(`${url}?${query}`)
  }

  it("answers echostr as plain text for the path's account's token", async () => {
    const h = harness(PLAIN)
    const response = await h.deliver(await get(URL_, WECHAT_TEST_TOKEN))
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/)
    expect(await response.text()).toBe('7016201484562382938')
  })

  it("another account's token, an unlisted account or a stale timestamp: 403, nothing echoed", async () => {
    const h = harness(PLAIN)
    for (const request of [
      await get(URL_, 'othertoken'),
      await get(`${GATEWAY}/webhooks/wechat/gh_000000000000`, WECHAT_TEST_TOKEN),
      await get(URL_, WECHAT_TEST_TOKEN, nowSeconds() - 301),
    ]) {
      const response = await h.deliver(request)
      expect(response.status).toBe(403)
      expect(await response.text()).not.toContain('7016201484562382938')
    }
  })

  it('without the channel configured: 503', async () => {
    const h = harness({})
    expect((await h.deliver(await get(URL_, WECHAT_TEST_TOKEN))).status).toBe(503)
  })
})

describe('WeChat: signatures and accounts', () => {
  it('a wrong, missing or stale signature is 401 and writes nothing', async () => {
    const h = harness(PLAIN)
    const xml = wechatXml(wechatText(wechatMsgId(), 'hi'))
    const forged = await wechatRequest(URL_, xml, { token: 'forgedtoken' })
    expect((await h.deliver(forged)).status).toBe(401)
    const unsigned = new Request(URL_, { method: 'POST', body: xml })
    expect((await h.deliver(unsigned)).status).toBe(401)
    const stale = await wechatRequest(URL_, xml, { timestamp: nowSeconds() - 301 })
    expect((await h.deliver(stale)).status).toBe(401)
    await nothingWritten(h)
  })

  it('encrypted: a tampered envelope, another key, a plaintext push to an encrypting account: 401, nothing written', async () => {
    const h = harness(ENCRYPTED)
    const xml = wechatXml(wechatText(wechatMsgId(), 'hi'))
    const good = await wechatRequest(URL_, xml, { aesKey: WECHAT_TEST_AES_KEY })
    const body = (await good.text()).replace('<Encrypt><![CDATA[', '<Encrypt><![CDATA[AAAA')
    expect((await h.deliver(new Request(good.url, { method: 'POST', body }))).status).toBe(401)
    const otherKey = 'UnknownWeChatEncodingAesKey0123456789abcdef'
    expect((await h.deliver(await wechatRequest(URL_, xml, { aesKey: otherKey }))).status).toBe(401)
    expect((await h.deliver(await wechatRequest(URL_, xml))).status).toBe(401)
    await nothingWritten(h)
  })

  it("one account's push on another account's path, or signed with the other's token, writes nothing", async () => {
    const h = harness(PLAIN)
    // Signed with OTHER's token on OTHER's path, but for WECHAT_ACCOUNT (ToUserName): not OTHER's.
    const foreign = wechatXml(wechatText(wechatMsgId(), 'hi', { account: WECHAT_ACCOUNT }))
    expect(
      (await h.deliver(await wechatRequest(OTHER_URL, foreign, { token: 'othertoken' }))).status,
    ).toBe(401)
    // WECHAT_ACCOUNT's own push, signed with OTHER's token.
    expect(
      (await h.deliver(await wechatRequest(URL_, foreign, { token: 'othertoken' }))).status,
    ).toBe(401)
    await nothingWritten(h)
  })

  it("each account's own push is its own row", async () => {
    const h = harness(PLAIN)
    const mine = wechatXml(wechatText(wechatMsgId(), 'a'))
    const theirs = wechatXml(wechatText(wechatMsgId(), 'b', { account: OTHER }))
    expect(await expectSuccess(await h.deliver(await wechatRequest(URL_, mine)))).toBe('forwarded')
    expect(
      await expectSuccess(
        await h.deliver(await wechatRequest(OTHER_URL, theirs, { token: 'othertoken' })),
      ),
    ).toBe('forwarded')
    const { calls, rows } = await h.originCalls()
    expect(rows).toBe(2)
    expect(calls.map((c) => c.deliveryKey.split(':')[2]).sort()).toEqual(
      [WECHAT_ACCOUNT, OTHER].sort(),
    )
  })
})

describe('WeChat plain mode: a signed query is good once, for one body', () => {
  /** A push of `sender` with its own MsgId, as a forger would invent it. */
  const invented = (sender: string, text: string) =>
    wechatXml(wechatText(wechatMsgId(), text, { from: sender }))
  /** `url` with the signing part of `signed`'s query (what an access log shows of a request). */
  const withQueryOf = (signed: Request, body: string) =>
    new Request(`${URL_}${new URL(signed.url).search}`, { method: 'POST', body })

  it("the query string of the console's GET check, reused for POSTs with invented senders: 401 each, nothing written", async () => {
    // The check's query as WeChat documents it: signature, timestamp, nonce, echostr
    // (https://developers.weixin.qq.com/minigame/dev/guide/base-ability/message-push.md, whose
    // nonce this is; the same form as a plain POST's signature).
    const h = harness(PLAIN)
    const timestamp = String(nowSeconds())
    const nonce = '1514711492'
    const query = new URLSearchParams({
      signature: await wechatSignature([WECHAT_TEST_TOKEN, timestamp, nonce]),
      timestamp,
      nonce,
      echostr: '7016201484562382938',
    })
    const check = new Request(`${URL_}?${query}`)
    expect(await (await h.deliver(check)).text()).toBe('7016201484562382938')
    // The console checking again with the same URL is the same check.
    expect((await h.deliver(new Request(check.url))).status).toBe(200)
    for (const [sender, text] of [
      ['oForged1', 'pay me'],
      ['oForged2', 'reset my password'],
      ['oForged3', 'hello'],
    ] as const) {
      expect((await h.deliver(withQueryOf(check, invented(sender, text)))).status).toBe(401)
    }
    await nothingWritten(h)
    expect((await h.originCalls()).rows).toBe(0)
  })

  it("a POST's query with its own body again is the same push (a duplicate); with another body, 401", async () => {
    const h = harness(PLAIN)
    const first = await wechatRequest(URL_, invented('oReal', 'hi'))
    const body = await first.clone().text()
    expect(await expectSuccess(await h.deliver(first))).toBe('forwarded')
    expect(await expectSuccess(await h.deliver(withQueryOf(first, body)))).toBe('duplicate')
    expect((await h.deliver(withQueryOf(first, invented('oForged', 'hi')))).status).toBe(401)
    // Its body with one byte changed is another body.
    expect((await h.deliver(withQueryOf(first, `${body} `))).status).toBe(401)
    const { calls, rows } = await h.originCalls()
    expect(rows).toBe(1)
    expect(calls).toHaveLength(1)
  })

  it('Redis out of reach: the origin binds a plain query alone; the same query with another body is still 401', async () => {
    const h = harness({ ...PLAIN, UPSTASH_REDIS_REST_URL: inject('deadRedisUrl') })
    const first = await wechatRequest(URL_, invented('oUser', 'hi'))
    const body = await first.clone().text()
    expect((await h.deliver(first)).status).toBe(200)
    expect((await h.deliver(withQueryOf(first, invented('oForged', 'pay me')))).status).toBe(401)
    expect((await h.deliver(withQueryOf(first, body))).status).toBe(200)
    const { calls, rows, bindings } = await h.originCalls()
    expect(rows).toBe(1)
    expect(calls.every((call) => call.body === 'hi')).toBe(true)
    expect(Object.keys(bindings)).toEqual([expect.stringMatching(/wechat-signature:gh_\w+:\d+\./)])
  })

  it('Redis forgot a binding (a flush, a failover): the origin still refuses another body', async () => {
    const h = harness(PLAIN)
    const first = await wechatRequest(URL_, invented('oUser', 'hi'))
    expect((await h.deliver(first)).status).toBe(200)
    const claims = await h.redis.exec<string[]>(['KEYS', `${h.redisKey(SIGNATURE_CLAIMS)}*`])
    expect(claims).toHaveLength(1)
    await h.redis.del(...claims)
    expect((await h.deliver(withQueryOf(first, invented('oForged', 'pay me')))).status).toBe(401)
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('the origin out of reach: Redis binds it alone, and refuses another body', async () => {
    const h = harness(PLAIN)
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const first = await wechatRequest(URL_, invented('oUser', 'hi'))
    // Bound in Redis; the forward fails, and the spool queue takes the push.
    expect(await expectSuccess(await h.deliver(first))).toBe('spooled')
    expect((await h.deliver(withQueryOf(first, invented('oForged', 'pay me')))).status).toBe(401)
  })

  it('Redis and the origin both out of reach: a plain push is spooled carrying its pending binding, for the origin to bind before it stores it', async () => {
    const { h, spool } = withQueues({ ...PLAIN, UPSTASH_REDIS_REST_URL: inject('deadRedisUrl') })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const first = await wechatRequest(URL_, invented('oUser', 'hi'))
    expect(await expectSuccess(await h.deliver(first))).toBe('spooled')
    const reused = withQueryOf(first, invented('oForged', 'pay me'))
    // No store can tell them apart now: the second body travels too, with the same binding key.
    expect(await expectSuccess(await h.deliver(reused))).toBe('spooled')
    const carried = spool.sent.map((m) => m.event.signatureBinding)
    expect(carried).toEqual([
      {
        key: expect.stringMatching(/wechat-signature:gh_/),
        hash: expect.any(String),
        ttlSeconds: 600,
      },
      {
        key: carried[0]?.key,
        hash: expect.not.stringMatching(carried[0]?.hash ?? ''),
        ttlSeconds: 600,
      },
    ])
    expect((await h.originCalls()).bindings).toEqual({})
  })

  it('the console GET check with both out of reach: 503 (it has nothing to carry its binding; submit it again)', async () => {
    const h = harness({ ...PLAIN, UPSTASH_REDIS_REST_URL: inject('deadRedisUrl') })
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const timestamp = String(nowSeconds())
    const query = new URLSearchParams({
      signature: await wechatSignature([WECHAT_TEST_TOKEN, timestamp, '1514711492']),
      timestamp,
      nonce: '1514711492',
      echostr: '7016201484562382938',
    })
    expect((await h.deliver(new Request(`${URL_}?${query}`))).status).toBe(503)
  })

  it('an encrypted push needs no binding: Redis out of reach, it is forwarded', async () => {
    const h = harness({ ...ENCRYPTED, UPSTASH_REDIS_REST_URL: inject('deadRedisUrl') })
    const push = await wechatRequest(URL_, invented('oUser', 'hi'), { aesKey: WECHAT_TEST_AES_KEY })
    expect(await expectSuccess(await h.deliver(push))).toBe('forwarded')
    expect((await h.originCalls()).bindings).toEqual({})
  })
})

describe('WeChat: replays and concurrent copies', () => {
  it.each([
    ['plain', PLAIN, {}],
    ['encrypted', ENCRYPTED, { aesKey: WECHAT_TEST_AES_KEY }],
  ] as const)(
    '%s: three tries of one message (each signed anew) are one row',
    async (_mode, env, signing) => {
      const h = harness(env)
      const delivery = wechatDelivery(signing)
      const decisions = []
      for (let attempt = 0; attempt < 3; attempt++)
        decisions.push(await expectSuccess(await h.send(delivery)))
      expect(decisions).toEqual(['forwarded', 'duplicate', 'duplicate'])
      const { calls, rows } = await h.originCalls()
      expect(rows).toBe(1)
      expect(calls[0]).toMatchObject({ deliveryKey: delivery.deliveryKey })
      expect(await h.redisGet(delivery.deliveryKey)).toMatch(DONE_VALUE)
    },
  )

  it('10 concurrent copies leave one row; every answer is success or a retry', async () => {
    const h = harness(ENCRYPTED)
    const delivery = wechatDelivery({ aesKey: WECHAT_TEST_AES_KEY })
    const answers = await Promise.all(
      Array.from({ length: 10 }, async () => (await h.send(delivery)).status),
    )
    expect(answers.every((s) => s === 200 || s === 503)).toBe(true)
    expect(await expectSuccess(await h.send(delivery))).toBe('duplicate')
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('the same MsgId already stored by another delivery path: Postgres answers it as a duplicate', async () => {
    const h = harness(PLAIN)
    const delivery = wechatDelivery()
    await expectSuccess(await h.send(delivery))
    await h.redis.del(h.redisKey(delivery.deliveryKey))
    await expectSuccess(await h.send(delivery))
    expect((await h.originCalls()).rows).toBe(1)
  })
})

describe('WeChat: events and bodies', () => {
  it('an event is acknowledged and recorded once, never forwarded', async () => {
    const h = harness(PLAIN)
    const event = wechatXml({
      ToUserName: WECHAT_ACCOUNT,
      FromUserName: 'oUser',
      CreateTime: String(nowSeconds()),
      MsgType: 'event',
      Event: 'subscribe',
      EventKey: 'qrscene_123',
    })
    expect(await expectSuccess(await h.deliver(await wechatRequest(URL_, event)))).toBe('recorded')
    expect(await expectSuccess(await h.deliver(await wechatRequest(URL_, event)))).toBe('duplicate')
    expect((await h.originCalls()).calls).toHaveLength(0)
  })

  it('the largest body (MAX_BODY_BYTES) is taken; one byte more is 413 and writes nothing', async () => {
    const h = harness(PLAIN)
    const limit = 262_144
    const msgId = wechatMsgId()
    const frame = wechatXml(wechatText(msgId, ''))
    const largest = wechatXml(
      wechatText(msgId, 'x'.repeat(limit - new TextEncoder().encode(frame).length)),
    )
    expect(new TextEncoder().encode(largest).length).toBe(limit)
    const over = (await h.deliver(await wechatRequest(URL_, `${largest} `))).status
    expect(over).toBe(413)
    await nothingWritten(h)
    expect(await expectSuccess(await h.deliver(await wechatRequest(URL_, largest)))).toBe(
      'forwarded',
    )
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('XML that is not a push: 400, nothing written', async () => {
    const h = harness(PLAIN)
    for (const body of [
      '<xml><MsgType>text',
      '{"MsgId":1}',
      '<!DOCTYPE x [<!ENTITY a "a">]><xml></xml>',
    ]) {
      expect((await h.deliver(await wechatRequest(URL_, body))).status).toBe(400)
    }
    await nothingWritten(h)
  })
})
