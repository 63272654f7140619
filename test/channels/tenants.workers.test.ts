/**
 * Per-tenant secrets in workerd, through the real routes, with real vendor signatures: a request
 * signed with tenant A's secret but naming tenant B is refused (401) and leaves nothing behind (no
 * Redis key, no origin call); each tenant's own secrets, rotation included, verify; the
 * single-tenant variables keep working (test/gateway/routes.workers.test.ts runs on them).
 */
import { describe, expect, it } from 'vitest'
import {
  nowSeconds,
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
  WECHAT_TEST_APP_ID,
  waText,
  wechatDelivery,
  whatsappCloudPost,
} from '../../local/vendor-deliveries'
import { DONE_VALUE } from '../support/claim-values'
import { GATEWAY, type Harness, harness, WEBHOOKS } from '../support/workerd/harness'
import { nothingWritten } from './support/workerd'

const { slack: slackUrl, twilio: twilioUrl } = WEBHOOKS
const telegramUrl = (bot: string) => `${WEBHOOKS.telegram}/${bot}`

const SLACK = {
  appA: 'A0TENANTA',
  appB: 'A0TENANTB',
  /** The workspaces each app is installed in (SLACK_TEAMS_BY_APP). */
  teamA: 'T0TEAMA',
  teamA2: 'T0TEAMA2',
  teamB: 'T0TEAMB',
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
const WA = {
  appA: '111',
  appB: '222',
  numberA: '1001',
  numberB: '2002',
  a1: 'wa-a-new',
  a2: 'wa-a-old',
  b: 'wa-b',
}
const WECHAT = {
  accountA: 'gh_aaaaaaaaaaaa',
  accountB: 'gh_bbbbbbbbbbbb',
  a1: 'wechatanew',
  a2: 'wechataold',
  b: 'wechatb',
  /** Two encrypting accounts, each its own token and EncodingAESKey. */
  aesA: 'gh_cccccccccccc',
  aesB: 'gh_dddddddddddd',
}
const WECHAT_AES_KEY_OF: Record<string, string> = {
  [WECHAT.aesA]: 'AccountCWeChatEncodingAesKey0123456789abcde',
  [WECHAT.aesB]: 'AccountDWeChatEncodingAesKey0123456789abcde',
}
const SLACK_TEAM_OF: Record<string, string> = {
  [SLACK.appA]: SLACK.teamA,
  [SLACK.appB]: SLACK.teamB,
}
const WA_NUMBER_OF: Record<string, string> = { [WA.appA]: WA.numberA, [WA.appB]: WA.numberB }

/** Only the per-tenant variables: the single-tenant ones of the test bindings are cleared. */
function multiTenant(): Harness {
  return harness({
    SLACK_SIGNING_SECRET: '',
    SLACK_SIGNING_SECRETS_BY_APP: `${SLACK.appA}=${SLACK.a1}|${SLACK.a2},${SLACK.appB}=${SLACK.b}`,
    SLACK_TEAMS_BY_APP: `${SLACK.appA}=${SLACK.teamA}|${SLACK.teamA2},${SLACK.appB}=${SLACK.teamB}`,
    WHATSAPP_APP_SECRET: '',
    WHATSAPP_VERIFY_TOKEN: 'wa-verify',
    WHATSAPP_APP_SECRETS_BY_APP: `${WA.appA}=${WA.a1}|${WA.a2},${WA.appB}=${WA.b}`,
    WHATSAPP_PHONE_NUMBERS_BY_APP: `${WA.appA}=${WA.numberA},${WA.appB}=${WA.numberB}`,
    TWILIO_AUTH_TOKEN: '',
    TWILIO_AUTH_TOKENS_BY_ACCOUNT: `${TWILIO.accountA}=${TWILIO.a1}|${TWILIO.a2},${TWILIO.accountB}=${TWILIO.b}`,
    TELEGRAM_SECRET_TOKEN: '',
    TELEGRAM_BOT_ID: '',
    TELEGRAM_SECRET_TOKENS_BY_BOT: `${TELEGRAM.botA}=${TELEGRAM.a1}|${TELEGRAM.a2},${TELEGRAM.botB}=${TELEGRAM.b}`,
    WECHAT_TOKENS_BY_ACCOUNT: [
      `${WECHAT.accountA}=${WECHAT.a1}|${WECHAT.a2}`,
      `${WECHAT.accountB}=${WECHAT.b}`,
      `${WECHAT.aesA}=${WECHAT.a1}|${WECHAT.a2}`,
      `${WECHAT.aesB}=${WECHAT.b}`,
    ].join(','),
    WECHAT_AES_KEYS_BY_ACCOUNT: Object.entries(WECHAT_AES_KEY_OF)
      .map(([account, key]) => `${account}=${key}`)
      .join(','),
    WECHAT_APP_IDS_BY_ACCOUNT: `${WECHAT.aesA}=${WECHAT_TEST_APP_ID},${WECHAT.aesB}=${WECHAT_TEST_APP_ID}`,
  })
}

async function expectRefusedAndNothingWritten(h: Harness, response: Response): Promise<void> {
  expect(response.status).toBe(401)
  expect(await response.json()).toEqual({
    error: { code: 'unauthorized', message: 'unauthorized' },
  })
  await nothingWritten(h)
}

const waMessage = () => waText(`wamid.${randomId()}`, 'hello')

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
    request: (appId, secret) =>
      slackDelivery({ appId, team: SLACK_TEAM_OF[appId], secret }).request(GATEWAY),
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
  {
    name: 'WhatsApp Cloud (app id, its phone numbers)',
    tenants: { a: WA.appA, b: WA.appB },
    secrets: { a: [WA.a1, WA.a2], b: WA.b },
    // The body names no app: a number of B's signed with A's secret is "A's secret for B".
    request: (app, secret) =>
      whatsappCloudPost([{ phoneNumberId: WA_NUMBER_OF[app] ?? '', messages: [waMessage()] }], {
        secret,
      }).request(GATEWAY),
  },
  {
    name: 'WeChat (account in the path)',
    tenants: { a: WECHAT.accountA, b: WECHAT.accountB },
    secrets: { a: [WECHAT.a1, WECHAT.a2], b: WECHAT.b },
    request: (account, secret) => wechatDelivery({ account, secret }).request(GATEWAY),
  },
  {
    name: 'WeChat encrypted (account in the path, its EncodingAESKey)',
    tenants: { a: WECHAT.aesA, b: WECHAT.aesB },
    secrets: { a: [WECHAT.a1, WECHAT.a2], b: WECHAT.b },
    // A's token and A's key for B's account: the token is what fails (msg_signature).
    request: (account, secret) => {
      const keyOwner = secret === WECHAT.b ? WECHAT.aesB : WECHAT.aesA
      const aesKey = WECHAT_AES_KEY_OF[keyOwner] ?? ''
      return wechatDelivery({ account, secret, aesKey }).request(GATEWAY)
    },
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
    // An event must name its app: a signature that matched no named app vouches for none, so it
    // is refused (not kept as unrecognized under no tenant, which a replay could then place).
    await expectRefusedAndNothingWritten(
      h,
      await h.deliver(await slackRequest(slackUrl, payload, { secret: SLACK.a1 })),
    )
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

/**
 * Refused (401) and nothing of it written: no claim under its delivery keys, no origin call
 * beyond the `before` calls already made (tenant B's own messages, which stay).
 */
async function expectForeignRefused(
  h: Harness,
  response: Response,
  deliveryKeys: readonly string[],
  originCallsBefore: number,
): Promise<void> {
  expect(response.status).toBe(401)
  for (const key of deliveryKeys) expect(await h.redisGet(key)).toBeNull()
  expect((await h.originCalls()).calls).toHaveLength(originCallsBefore)
}

describe('Slack, the workspaces of each app (SLACK_TEAMS_BY_APP)', () => {
  it("app A's signature naming app A and B's workspace: a new message, an edit and a delete of B's message are 401, nothing written", async () => {
    const h = multiTenant()
    const ts = `${nowSeconds()}.000100`
    const own = slackDelivery({ appId: SLACK.appB, team: SLACK.teamB, ts, secret: SLACK.b })
    expect((await h.send(own)).status).toBe(200)
    const later = `${nowSeconds() + 1}.000000`
    const forged = [
      slackDelivery({ appId: SLACK.appA, team: SLACK.teamB, secret: SLACK.a1 }),
      slackDelivery({
        appId: SLACK.appA,
        team: SLACK.teamB,
        ts,
        editedAt: later,
        secret: SLACK.a1,
      }),
      slackDelivery({
        appId: SLACK.appA,
        team: SLACK.teamB,
        ts,
        deletedAt: later,
        secret: SLACK.a2,
      }),
    ]
    for (const delivery of forged) {
      await expectForeignRefused(h, await h.send(delivery), [delivery.deliveryKey], 1)
    }
  })

  it('an app writes for each workspace it lists, and an app the map does not list writes for none', async () => {
    const h = multiTenant()
    for (const team of [SLACK.teamA, SLACK.teamA2]) {
      const delivery = slackDelivery({ appId: SLACK.appA, team, secret: SLACK.a1 })
      expect((await h.send(delivery)).status).toBe(200)
    }
    expect((await h.originCalls()).calls.map((c) => c.messageKey.split(':')[0])).toEqual([
      SLACK.teamA,
      SLACK.teamA2,
    ])
    const unlisted = harness({
      SLACK_SIGNING_SECRET: '',
      SLACK_SIGNING_SECRETS_BY_APP: `${SLACK.appA}=${SLACK.a1},${SLACK.appB}=${SLACK.b}`,
      SLACK_TEAMS_BY_APP: `${SLACK.appA}=${SLACK.teamA}`,
    })
    const delivery = slackDelivery({ appId: SLACK.appB, team: SLACK.teamB, secret: SLACK.b })
    await expectForeignRefused(unlisted, await unlisted.send(delivery), [delivery.deliveryKey], 0)
  })

  it('several apps without SLACK_TEAMS_BY_APP: the channel is not configured (503), nothing written', async () => {
    const h = harness({
      SLACK_SIGNING_SECRET: '',
      SLACK_SIGNING_SECRETS_BY_APP: `${SLACK.appA}=${SLACK.a1},${SLACK.appB}=${SLACK.b}`,
      SLACK_TEAMS_BY_APP: '',
    })
    const delivery = slackDelivery({ appId: SLACK.appA, team: SLACK.teamB, secret: SLACK.a1 })
    const response = await h.send(delivery)
    expect(response.status).toBe(503)
    expect(await response.json()).toMatchObject({ error: { code: 'channel_not_configured' } })
    expect(await h.redisGet(delivery.deliveryKey)).toBeNull()
    expect((await h.originCalls()).calls).toHaveLength(0)
  })

  it('one app (or the shared secret) without SLACK_TEAMS_BY_APP writes for any workspace, as before', async () => {
    const one = harness({
      SLACK_SIGNING_SECRET: '',
      SLACK_SIGNING_SECRETS_BY_APP: `${SLACK.appA}=${SLACK.a1}`,
      SLACK_TEAMS_BY_APP: '',
    })
    const delivery = slackDelivery({ appId: SLACK.appA, team: SLACK.teamB, secret: SLACK.a1 })
    expect((await one.send(delivery)).status).toBe(200)
    const shared = harness({ SLACK_TEAMS_BY_APP: '' })
    expect((await shared.send(slackDelivery({ team: SLACK.teamB }))).status).toBe(200)
  })
})

describe("WhatsApp Cloud and Telegram: tenant A's edit or delete of tenant B's message", () => {
  it("app A's secret, an edit and a revoke of a message on B's number: 401, nothing written", async () => {
    const h = multiTenant()
    const original = `wamid.${randomId()}`
    const own = whatsappCloudPost(
      [{ phoneNumberId: WA.numberB, messages: [waText(original, 'mine')] }],
      { secret: WA.b },
    )
    expect((await h.deliver(await own.request(GATEWAY))).status).toBe(200)
    const change = (fields: object): Record<string, unknown> => ({
      ...waText(`wamid.${randomId()}`, ''),
      ...fields,
    })
    const forged = [
      change({
        type: 'edit',
        edit: { original_message_id: original, message: waText(original, 'x') },
      }),
      change({ type: 'revoke', revoke: { original_message_id: original } }),
    ]
    for (const message of forged) {
      const post = whatsappCloudPost([{ phoneNumberId: WA.numberB, messages: [message] }], {
        secret: WA.a1,
      })
      const key = `dedup:wa-cloud:${WA.numberB}:${String(message.id)}`
      await expectForeignRefused(h, await h.deliver(await post.request(GATEWAY)), [key], 1)
    }
  })

  it("bot A's secret on bot B's path, an edit of B's message: 401, nothing written", async () => {
    const h = multiTenant()
    const chatId = 555
    const own = telegramDelivery({ bot: TELEGRAM.botB, secret: TELEGRAM.b, chatId })
    expect((await h.send(own)).status).toBe(200)
    const edit = telegramDelivery({
      bot: TELEGRAM.botB,
      secret: TELEGRAM.a1,
      chatId,
      field: 'edited_message',
      editDate: 1700000100,
    })
    await expectForeignRefused(h, await h.send(edit), [edit.deliveryKey], 1)
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
