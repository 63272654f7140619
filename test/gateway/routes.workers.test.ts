/**
 * The routes in workerd: what each answers before any dedup work (config, size, signature,
 * parsing), and that nothing is claimed or forwarded when a request is refused.
 */
import { SELF } from 'cloudflare:test'
import { describe, expect, inject, it } from 'vitest'
import {
  slackDelivery,
  slackMessageEvent,
  slackRequest,
  TEST_SECRETS,
  telegramDelivery,
  telegramRequest,
  twilioDelivery,
  twilioParams,
  twilioRequest,
} from '../../local/vendor-deliveries'
import * as media from '../channels/support/media-payloads'
import { GATEWAY, harness, WEBHOOKS } from '../support/workerd/harness'
import { withQueues } from '../support/workerd/queues'

const { slack: slackUrl, twilio: twilioUrl, telegram: telegramUrl } = WEBHOOKS

describe('routes', () => {
  it('serves /healthz without secrets, with Redis answering', async () => {
    const response = await SELF.fetch(`${GATEWAY}/healthz`)
    expect(response.status).toBe(200)
    const body = await response.json()
    expect(body).toEqual({
      status: 'ok',
      channels: expect.objectContaining({ slack: true, twilio: true, telegram: true }),
      origin: 'ok',
      spool: true,
      spoolBodies: true,
      redis: 'ok',
      redisMs: expect.any(Number),
      checkedAt: expect.any(String),
    })
    expect(JSON.stringify(body)).not.toContain(TEST_SECRETS.slack)
  })

  it('/healthz is no Redis amplifier: 50 calls cost at most one PING (a cached reading)', async () => {
    const h = harness()
    const pings = async () => {
      const res = await fetch(inject('redisUrl'), {
        method: 'POST',
        headers: { authorization: `Bearer ${inject('redisToken')}` },
        body: JSON.stringify(['info', 'commandstats']),
      })
      const { result } = (await res.json()) as { result: string }
      return Number(/cmdstat_ping:calls=(\d+)/.exec(result)?.[1] ?? 0)
    }
    const before = await pings()
    for (let i = 0; i < 50; i++) {
      const response = await h.deliver(new Request(`${GATEWAY}/healthz`))
      expect(response.status).toBe(200)
    }
    expect((await pings()) - before).toBeLessThanOrEqual(1)
  })

  it('/healthz/deep needs the operator token (404 unset, 401 wrong) and shows the counters', async () => {
    expect((await harness().deliver(new Request(`${GATEWAY}/healthz/deep`))).status).toBe(404)
    const h = harness({ OPERATOR_TOKEN: 'op-token-for-tests' })
    const wrong = await h.deliver(
      new Request(`${GATEWAY}/healthz/deep`, { headers: { authorization: 'Bearer nope' } }),
    )
    expect(wrong.status).toBe(401)
    expect(await wrong.text()).not.toContain('op-token-for-tests')
    await h.redis.hincrby(h.redisKey('dedup:stats'), 'spool_queued:slack', 2)
    const deep = await h.deliver(
      new Request(`${GATEWAY}/healthz/deep`, {
        headers: { authorization: 'Bearer op-token-for-tests' },
      }),
    )
    expect(deep.status).toBe(200)
    expect(await deep.json()).toMatchObject({ redis: 'ok', counters: { 'spool_queued:slack': 2 } })
  })

  it('/healthz/deep: past 10 refused tokens from one address, every try from it is 429 for the window, the right token too; another address is unaffected', async () => {
    const h = harness({ OPERATOR_TOKEN: 'op-token-for-tests' })
    const address = `198.51.100.${1 + Math.floor(Math.random() * 250)}`
    const ask = (token: string, from = address) =>
      h.deliver(
        new Request(`${GATEWAY}/healthz/deep`, {
          headers: { authorization: `Bearer ${token}`, 'cf-connecting-ip': from },
        }),
      )
    // The right token takes nothing from the count.
    expect((await ask('op-token-for-tests')).status).toBe(200)
    for (let i = 0; i < 10; i++) expect((await ask(`guess-${i}`)).status).toBe(401)
    const limited = await ask('op-token-for-tests')
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await limited.json()).toMatchObject({ error: { code: 'too_many_requests' } })
    expect((await ask('op-token-for-tests', '203.0.113.7')).status).toBe(200)
  })

  it('/healthz: a channel nobody configured is false but no degradation; a half-configured one degrades', async () => {
    const unused = harness({ TELEGRAM_SECRET_TOKEN: '', TELEGRAM_BOT_ID: '' })
    const quiet = await (await unused.deliver(new Request(`${GATEWAY}/healthz`))).json()
    expect(quiet).toMatchObject({ status: 'ok', channels: { telegram: false, slack: true } })
    const half = harness({ TELEGRAM_BOT_ID: '' })
    const broken = await (await half.deliver(new Request(`${GATEWAY}/healthz`))).json()
    expect(broken).toMatchObject({ status: 'degraded', channels: { telegram: false } })
  })

  it('reports Redis unavailable on /healthz when it does not answer', async () => {
    const h = harness({ UPSTASH_REDIS_REST_URL: inject('deadRedisUrl') })
    const response = await h.deliver(new Request(`${GATEWAY}/healthz`))
    expect(await response.json()).toMatchObject({ status: 'degraded', redis: 'unavailable' })
  })

  it('answers 404 as JSON elsewhere', async () => {
    const response = await SELF.fetch(`${GATEWAY}/nope`)
    expect(response.status).toBe(404)
    expect(await response.json()).toEqual({ error: { code: 'not_found', message: 'not found' } })
  })

  it('forwards a signed Slack message through the configured bindings (SELF)', async () => {
    const delivery = slackDelivery()
    const response = await SELF.fetch(await delivery.request(GATEWAY))
    expect(response.status).toBe(200)
    const calls = await (await fetch(`${inject('originUrl')}/ns/self/calls`)).json()
    expect(calls).toMatchObject({
      calls: expect.arrayContaining([
        expect.objectContaining({ deliveryKey: delivery.deliveryKey }),
      ]),
    })
  })

  it('says in x-dedup-decision what became of a delivery: forwarded, then duplicate', async () => {
    const h = harness()
    const delivery = slackDelivery()
    const first = await h.send(delivery)
    const again = await h.send(delivery)
    expect([first.status, again.status]).toEqual([200, 200])
    expect(first.headers.get('x-dedup-decision')).toBe('forwarded')
    expect(again.headers.get('x-dedup-decision')).toBe('duplicate')
  })

  it('answers url_verification with the challenge, after verifying it', async () => {
    const h = harness()
    const challenge = '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P'
    const payload = { token: 'x', challenge, type: 'url_verification' }
    const ok = await h.deliver(await slackRequest(slackUrl, payload))
    expect(ok.status).toBe(200)
    expect(await ok.text()).toBe(challenge)
    const forged = await h.deliver(await slackRequest(slackUrl, payload, { secret: 'wrong' }))
    expect(forged.status).toBe(401)
    expect(await forged.text()).not.toContain(challenge)
  })

  describe.each([
    ['slack', () => slackDelivery({ forged: true })],
    ['twilio', () => twilioDelivery({ forged: true })],
    ['telegram', () => telegramDelivery({ forged: true })],
  ])('%s with a bad signature', (_channel, forged) => {
    it('gets an opaque 401; no Redis key, no origin call', async () => {
      const h = harness()
      const delivery = forged()
      const response = await h.send(delivery)
      expect(response.status).toBe(401)
      expect(await response.json()).toEqual({
        error: { code: 'unauthorized', message: 'unauthorized' },
      })
      expect(await h.redisGet(delivery.deliveryKey)).toBeNull()
      expect((await h.originCalls()).calls).toHaveLength(0)
    })
  })

  it('refuses an oversized body with 413 before verifying or claiming', async () => {
    const h = harness({ MAX_BODY_BYTES: '2048' })
    const big = slackMessageEvent({ text: 'x'.repeat(4096) })
    const declared = await h.deliver(await slackRequest(slackUrl, big))
    expect(declared.status).toBe(413)
    expect(await declared.json()).toMatchObject({ error: { code: 'body_too_large' } })
    // Without a content-length (streamed), counted while reading.
    const signed = await slackRequest(slackUrl, big)
    const stream = new Response(JSON.stringify(big)).body
    const chunked = new Request(slackUrl, { method: 'POST', headers: signed.headers, body: stream })
    chunked.headers.delete('content-length')
    expect((await h.deliver(chunked)).status).toBe(413)
    expect(await h.redisGet('dedup:slack:A123ABC456:Ev123ABC456')).toBeNull()
    expect((await h.originCalls()).calls).toHaveLength(0)
  })

  it.each([
    ['slack', () => slackRequest(slackUrl, '{"type":"event_callback",')],
    ['telegram', async () => telegramRequest(telegramUrl, '{"update_id": 1, "message": ')],
  ])(
    'answers 400 to an unparseable %s body after a valid signature; nothing claimed',
    async (_name, makeRequest) => {
      const h = harness()
      const response = await h.deliver(await makeRequest())
      expect(response.status).toBe(400)
      expect(await response.json()).toMatchObject({ error: { code: 'invalid_payload' } })
      expect(await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])).toEqual([])
      expect((await h.originCalls()).calls).toHaveLength(0)
    },
  )

  it('answers 503 channel_not_configured for a channel without its secret; the others work', async () => {
    const h = harness({ TWILIO_AUTH_TOKEN: '' })
    const twilio = await h.send(twilioDelivery())
    expect(twilio.status).toBe(503)
    expect(await twilio.json()).toMatchObject({ error: { code: 'channel_not_configured' } })
    expect((await h.send(slackDelivery())).status).toBe(200)
    expect((await h.send(telegramDelivery())).status).toBe(200)
    expect((await h.originCalls()).calls.map((c) => c.channel)).toEqual(['slack', 'telegram'])
  })

  it('answers Twilio with empty TwiML', async () => {
    const h = harness()
    const response = await h.send(twilioDelivery())
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/xml/)
    expect(await response.text()).toContain('<Response/>')
  })

  it('verifies Twilio against PUBLIC_BASE_URL when set', async () => {
    const h = harness({ PUBLIC_BASE_URL: 'https://hooks.example.com' })
    const params = twilioParams()
    const viaProxy = await twilioRequest(twilioUrl, params, {
      signedUrl: 'https://hooks.example.com/webhooks/twilio',
    })
    expect((await h.deliver(viaProxy)).status).toBe(200)
    const direct = await twilioRequest(twilioUrl, params)
    expect((await h.deliver(direct)).status).toBe(401)
  })

  it('acknowledges documented non-message deliveries (bot echoes, member updates) with 200 and no claim', async () => {
    const h = harness()
    const bot = {
      ...slackMessageEvent(),
      event: { type: 'message', channel: 'C1', bot_id: 'B1', ts: '1.1', text: 'x' },
    }
    expect((await h.deliver(await slackRequest(slackUrl, bot))).status).toBe(200)
    const member = { update_id: 77, my_chat_member: { chat: { id: 1 }, from: { id: 1 }, date: 1 } }
    expect((await h.deliver(telegramRequest(telegramUrl, member))).status).toBe(200)
    expect(await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])).toEqual([])
    expect((await h.originCalls()).calls).toHaveLength(0)
  })

  it('a verified body its channel cannot place is kept as a dead letter, never answered "ignored"', async () => {
    const { h, dead } = withQueues()
    const twilio = await h.deliver(await twilioRequest(twilioUrl, [['Body', 'hi']]))
    const telegram = await h.deliver(
      telegramRequest(telegramUrl, { update_id: 78, guest_message: { text: 'hello' } }),
    )
    expect([twilio.status, telegram.status]).toEqual([200, 200])
    expect(telegram.headers.get('x-dedup-decision')).toBe('unrecognized')
    expect(dead.sent.map((m) => (m.event as { reason: string }).reason)).toEqual([
      'twilio_without_sid',
      'telegram_update_other',
    ])
    expect(dead.sent[1]?.dead.error).toBe('unrecognized_event: telegram_update_other')
    expect((await h.originCalls()).calls).toHaveLength(0)
  })
})

describe('media-only deliveries (signed): forwarded with their attachments, never ignored', () => {
  it('a Telegram photo without caption, a Slack file_share without text, a Twilio MMS without Body', async () => {
    const h = harness()
    const updateId = Math.floor(Math.random() * 2 ** 31)
    const photo = media.telegramPhotoUpdate({ updateId })
    const eventId = `Ev${crypto.randomUUID().slice(0, 8)}`
    const share = media.slackFileShare([media.SLACK_FILE], { eventId })
    const mediaSid = 'ME0123456789abcdef0123456789abcdef'
    const mms = media.twilioMediaParams([['image/jpeg', media.twilioMediaUrl(mediaSid)]], {
      body: '',
    })
    for (const request of [
      telegramRequest(telegramUrl, photo),
      await slackRequest(slackUrl, share),
      await twilioRequest(twilioUrl, mms),
    ]) {
      expect((await h.deliver(request)).status).toBe(200)
    }
    const calls = (await h.originCalls()).calls
    expect(
      calls.map(({ channel, kind, body, attachments }) => ({ channel, kind, body, attachments })),
    ).toEqual([
      { channel: 'telegram', kind: 'message', body: '', attachments: [media.TELEGRAM_PHOTO] },
      { channel: 'slack', kind: 'message', body: '', attachments: [media.SLACK_FILE_ATTACHMENT] },
      {
        channel: 'whatsapp',
        kind: 'message',
        body: '',
        attachments: [
          {
            kind: 'image',
            mediaId: mediaSid,
            url: media.twilioMediaUrl(mediaSid),
            mimeType: 'image/jpeg',
          },
        ],
      },
    ])
  })

  it('a Twilio media delivery signed without its media parameters is refused (they are signed too)', async () => {
    const h = harness()
    const mms = media.twilioMediaParams([
      ['image/jpeg', media.twilioMediaUrl('ME0123456789abcdef0123456789abcdef')],
    ])
    const signedWithout = mms.filter(([name]) => !name.startsWith('Media'))
    const signature =
      (await twilioRequest(twilioUrl, signedWithout)).headers.get('x-twilio-signature') ?? ''
    const forged = await twilioRequest(twilioUrl, mms, { signature })
    expect((await h.deliver(forged)).status).toBe(401)
    expect((await h.originCalls()).calls).toHaveLength(0)
  })
})
