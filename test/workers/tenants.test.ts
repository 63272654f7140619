/**
 * Per-tenant secrets in workerd, through the real routes, with real vendor signatures: a request
 * signed with tenant A's secret but naming tenant B is refused (401) and leaves nothing behind (no
 * Redis key, no origin call); each tenant's own secrets, rotation included, verify; the
 * single-tenant variables keep working (test/workers/routes.test.ts runs on them).
 */
import { describe, expect, it } from 'vitest'
import {
  randomId,
  slackDelivery,
  slackMessageEvent,
  slackRequest,
  telegramDelivery,
  telegramRequest,
  telegramUpdate,
  twilioDelivery,
  twilioParams,
  twilioRequest,
} from '../../local/vendor-deliveries'
import { DONE_VALUE } from '../support/claim-values'
import { GATEWAY, type Harness, harness, WEBHOOKS } from './support/harness'

const { slack: slackUrl, twilio: twilioUrl } = WEBHOOKS
const telegramUrl = (bot: string) => `${WEBHOOKS.telegram}/${bot}`

const SLACK = {
  appA: 'A0TENANTA',
  appB: 'A0TENANTB',
  a1: 'slack-a-new',
  a2: 'slack-a-old',
  b: 'slack-b',
}
const TWILIO = {
  accountA: `AC${'a'.repeat(32)}`,
  accountB: `AC${'b'.repeat(32)}`,
  a1: 'twilio-a-new',
  a2: 'twilio-a-old',
  b: 'twilio-b',
}
const TELEGRAM = { botA: '1111', botB: '2222', a1: 'tg-a-new', a2: 'tg-a-old', b: 'tg-b' }

/** Only the per-tenant variables: the single-tenant ones of the test bindings are cleared. */
function multiTenant(): Harness {
  return harness({
    SLACK_SIGNING_SECRET: '',
    SLACK_SIGNING_SECRETS_BY_APP: `${SLACK.appA}=${SLACK.a1}|${SLACK.a2},${SLACK.appB}=${SLACK.b}`,
    TWILIO_AUTH_TOKEN: '',
    TWILIO_AUTH_TOKENS_BY_ACCOUNT: `${TWILIO.accountA}=${TWILIO.a1}|${TWILIO.a2},${TWILIO.accountB}=${TWILIO.b}`,
    TELEGRAM_SECRET_TOKEN: '',
    TELEGRAM_BOT_ID: '',
    TELEGRAM_SECRET_TOKENS_BY_BOT: `${TELEGRAM.botA}=${TELEGRAM.a1}|${TELEGRAM.a2},${TELEGRAM.botB}=${TELEGRAM.b}`,
  })
}

async function expectRefusedAndNothingWritten(h: Harness, response: Response): Promise<void> {
  expect(response.status).toBe(401)
  expect(await response.json()).toEqual({
    error: { code: 'unauthorized', message: 'unauthorized' },
  })
  expect(await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])).toEqual([])
  expect((await h.originCalls()).calls).toHaveLength(0)
}

function slackFor(app: string) {
  const eventId = `Ev${randomId()}`
  const payload = slackMessageEvent({ appId: app, eventId, ts: `${Date.now() / 1000}` })
  return { payload, deliveryKey: `dedup:slack:${app}:${eventId}` }
}

interface TenantCase {
  name: string
  /** Tenant A with its rotation list (two secrets), tenant B with one. */
  tenants: { a: string; b: string }
  secrets: { a: readonly [string, string]; b: string }
  /** A fresh delivery for `tenant`, signed with `secret`. */
  request(tenant: string, secret: string): Promise<Request>
}

const CASES: TenantCase[] = [
  {
    name: 'Slack (api_app_id)',
    tenants: { a: SLACK.appA, b: SLACK.appB },
    secrets: { a: [SLACK.a1, SLACK.a2], b: SLACK.b },
    request: (appId, secret) => slackDelivery({ appId, secret }).request(GATEWAY),
  },
  {
    name: 'Twilio (AccountSid)',
    tenants: { a: TWILIO.accountA, b: TWILIO.accountB },
    secrets: { a: [TWILIO.a1, TWILIO.a2], b: TWILIO.b },
    request: (accountSid, secret) => twilioDelivery({ accountSid, secret }).request(GATEWAY),
  },
  {
    name: 'Telegram (bot id in the path)',
    tenants: { a: TELEGRAM.botA, b: TELEGRAM.botB },
    secrets: { a: [TELEGRAM.a1, TELEGRAM.a2], b: TELEGRAM.b },
    request: (bot, secret) => telegramDelivery({ bot, secret }).request(GATEWAY),
  },
]

describe.each(CASES)('$name', ({ tenants, secrets, request }) => {
  it("tenant A's secrets (each rotation entry) for tenant B: 401, nothing written", async () => {
    const h = multiTenant()
    for (const secret of secrets.a) {
      await expectRefusedAndNothingWritten(h, await h.deliver(await request(tenants.b, secret)))
    }
  })

  it('each tenant verifies with its own secrets, every rotation entry', async () => {
    const h = multiTenant()
    const signed = [
      [tenants.a, secrets.a[0]],
      [tenants.a, secrets.a[1]],
      [tenants.b, secrets.b],
    ] as const
    for (const [tenant, secret] of signed) {
      expect((await h.deliver(await request(tenant, secret))).status).toBe(200)
    }
    expect((await h.originCalls()).calls).toHaveLength(3)
  })
})

describe('Slack, secrets per api_app_id', () => {
  it('an app that is not configured: 401 whatever the secret', async () => {
    const h = multiTenant()
    const { payload } = slackFor('A0STRANGER')
    await expectRefusedAndNothingWritten(
      h,
      await h.deliver(await slackRequest(slackUrl, payload, { secret: SLACK.a1 })),
    )
  })
  it('answers the url_verification handshake (it names no app) for a configured secret only', async () => {
    const h = multiTenant()
    const payload = { token: 'x', challenge: 'chal-123', type: 'url_verification' }
    const ok = await h.deliver(await slackRequest(slackUrl, payload, { secret: SLACK.b }))
    expect(ok.status).toBe(200)
    expect(await ok.text()).toBe('chal-123')
    const forged = await h.deliver(await slackRequest(slackUrl, payload, { secret: 'nope' }))
    expect(forged.status).toBe(401)
  })

  it('an event or interaction without api_app_id, signed by a tenant, is written as no one', async () => {
    const h = multiTenant()
    const { payload } = slackFor(SLACK.appA)
    delete payload.api_app_id
    const event = await h.deliver(await slackRequest(slackUrl, payload, { secret: SLACK.a1 }))
    // An event must name its app: refused as a bad payload (the signature was good).
    expect(event.status).toBe(400)
    expect(await event.json()).toMatchObject({ error: { code: 'invalid_payload' } })
    // An interaction would fall back to the team id as its scope: not for an unnamed app.
    const interaction = `payload=${encodeURIComponent(
      JSON.stringify({ type: 'block_actions', trigger_id: '1.2.abc', team: { id: 'T1' } }),
    )}`
    await expectRefusedAndNothingWritten(
      h,
      await h.deliver(
        await slackRequest(slackUrl, interaction, {
          secret: SLACK.a1,
          contentType: 'application/x-www-form-urlencoded',
        }),
      ),
    )
  })
})

describe('Twilio, tokens per AccountSid', () => {
  const sid = () => `SM${randomId()}${randomId()}`

  it('an account that is not configured (or no AccountSid at all): 401', async () => {
    const h = multiTenant()
    const stranger = twilioParams({ accountSid: `AC${'c'.repeat(32)}`, messageSid: sid() })
    await expectRefusedAndNothingWritten(
      h,
      await h.deliver(await twilioRequest(twilioUrl, stranger, { token: TWILIO.a1 })),
    )
    const anonymous = twilioParams({ messageSid: sid() }).filter(([n]) => n !== 'AccountSid')
    await expectRefusedAndNothingWritten(
      h,
      await h.deliver(await twilioRequest(twilioUrl, anonymous, { token: TWILIO.a1 })),
    )
  })
})

describe('Telegram, several bots on one deployment (bot id in the path)', () => {
  const updateId = () => Math.floor(Math.random() * 2 ** 31)

  it('each bot verifies with its own tokens; keys are scoped by the bot of the path', async () => {
    const h = multiTenant()
    const a = updateId()
    const b = updateId()
    const update = (id: number) => telegramUpdate({ updateId: id, chatId: 77, messageId: 5 })
    const requests = [
      telegramRequest(telegramUrl(TELEGRAM.botA), update(a), TELEGRAM.a2),
      telegramRequest(telegramUrl(TELEGRAM.botB), update(b), TELEGRAM.b),
    ]
    for (const request of requests) expect((await h.deliver(request)).status).toBe(200)
    const { calls } = await h.originCalls()
    expect(calls.map((c) => [c.deliveryKey, c.messageKey])).toEqual([
      [`dedup:telegram:${TELEGRAM.botA}:${a}`, `${TELEGRAM.botA}:77:5`],
      [`dedup:telegram:${TELEGRAM.botB}:${b}`, `${TELEGRAM.botB}:77:5`],
    ])
  })

  it('an unknown bot, a malformed bot id, or the bare path without TELEGRAM_BOT_ID: 401', async () => {
    const h = multiTenant()
    for (const url of [telegramUrl('3333'), telegramUrl('12ab'), `${GATEWAY}/webhooks/telegram`]) {
      await expectRefusedAndNothingWritten(
        h,
        await h.deliver(telegramRequest(url, telegramUpdate(), TELEGRAM.a1)),
      )
    }
  })

  it('the single-tenant pair also serves /webhooks/telegram/{TELEGRAM_BOT_ID}', async () => {
    const h = harness({ TELEGRAM_SECRET_TOKEN: 'legacy-token', TELEGRAM_BOT_ID: '5555' })
    const id = updateId()
    const path = telegramRequest(
      telegramUrl('5555'),
      telegramUpdate({ updateId: id }),
      'legacy-token',
    )
    expect((await h.deliver(path)).status).toBe(200)
    const other = telegramRequest(telegramUrl('6666'), telegramUpdate(), 'legacy-token')
    expect((await h.deliver(other)).status).toBe(401)
    expect((await h.originCalls()).calls.map((c) => c.deliveryKey)).toEqual([
      `dedup:telegram:5555:${id}`,
    ])
  })
})

describe('Telegram updates that are not customer messages, and business messages', () => {
  /** A Telegram message object in `chat` from user `from`, with `extra` fields. */
  const message = (id: number, chat: object, from: number, extra: object) => ({
    message_id: id,
    date: 1700000000,
    chat,
    from: { id: from, is_bot: false, first_name: 'A' },
    ...extra,
  })

  it('a service message is acknowledged and recorded, never forwarded', async () => {
    const h = harness()
    const id = Math.floor(Math.random() * 2 ** 31)
    const update = {
      update_id: id,
      message: message(9, { id: -100123, type: 'supergroup', title: 'G' }, 5, {
        new_chat_members: [{ id: 6, is_bot: false, first_name: 'B' }],
      }),
    }
    const response = await h.deliver(telegramRequest(`${GATEWAY}/webhooks/telegram`, update))
    expect(response.status).toBe(200)
    expect((await h.originCalls()).calls).toHaveLength(0)
    expect(await h.redisGet(`dedup:telegram:${h.env.TELEGRAM_BOT_ID}:${id}`)).toMatch(DONE_VALUE)
  })

  it('a business_message is forwarded under a key scoped by bot and business connection', async () => {
    const h = harness()
    const id = Math.floor(Math.random() * 2 ** 31)
    const update = {
      update_id: id,
      business_message: message(3, { id: 42, type: 'private', first_name: 'C' }, 42, {
        business_connection_id: 'BCabc_123',
        text: 'hello business',
      }),
    }
    const response = await h.deliver(telegramRequest(`${GATEWAY}/webhooks/telegram`, update))
    expect(response.status).toBe(200)
    const bot = h.env.TELEGRAM_BOT_ID
    expect((await h.originCalls()).calls.map((c) => [c.deliveryKey, c.messageKey])).toEqual([
      [`dedup:telegram:${bot}:${id}`, `${bot}:biz:BCabc_123:42:3`],
    ])
  })
})
