/**
 * One case per webhook channel for the connection tests: a fresh tenant of it (its account,
 * ids and secret field as the contract's kinds have them) and a fresh delivery for it to any
 * URL, signed the way the vendor signs (the fixtures of local/vendor-deliveries.ts).
 * @module
 */
import type { ConnectionChannel } from '../../../contract/connection'
import {
  lineBody,
  lineEventId,
  lineMessageId,
  lineRequest,
  lineText,
  messagingBody,
  messagingText,
  metaMid,
  metaRequest,
  randomBelow,
  randomHex,
  randomId,
  slackMessageEvent,
  slackRequest,
  telegramRequest,
  telegramUpdate,
  twilioParams,
  twilioRequest,
  waBatch,
  waText,
  wechatMsgId,
  wechatRequest,
  wechatText,
  wechatXml,
} from '../../../local/vendor-deliveries'

export interface Tenant {
  account: string
  /** Its ids (a Slack app's workspace, a Meta app's number or Page); the first is in its bodies. */
  ids: string[]
}

export interface ChannelCase {
  channel: ConnectionChannel
  /** The one secret field the case signs with. */
  field: string
  /** A fresh tenant, and a fresh secret of the form its vendor issues. */
  tenant(): Tenant
  secret(): string
  /** A fresh delivery for `tenant` to `url`, signed with `secret`. */
  request(url: string, tenant: Tenant, secret: string): Promise<Request>
  /** Variables the channel needs besides its secrets (Meta's handshake token). */
  env?: Record<string, string>
}

const digits = (n: number) =>
  `${1 + randomBelow(9)}${String(randomBelow(10 ** (n - 1))).padStart(n - 1, '0')}`
const upper = () => randomHex(5).toUpperCase()

export const CASES: ChannelCase[] = [
  {
    channel: 'telegram',
    field: 'secret_token',
    tenant: () => ({ account: digits(10), ids: [] }),
    secret: () => `tg-${randomId()}`,
    request: async (url, _tenant, secret) =>
      telegramRequest(url, telegramUpdate({ updateId: randomBelow(2 ** 31) }), secret),
  },
  {
    channel: 'slack',
    field: 'signing_secret',
    tenant: () => ({ account: `A0${upper()}`, ids: [`T0${upper()}`] }),
    secret: () => `slack-${randomId()}`,
    request: (url, tenant, secret) =>
      slackRequest(
        url,
        slackMessageEvent({
          appId: tenant.account,
          team: tenant.ids[0] as string,
          eventId: `Ev${randomId()}`,
          ts: `${Date.now() / 1000}`,
        }),
        { secret },
      ),
  },
  {
    channel: 'twilio',
    field: 'auth_token',
    tenant: () => ({ account: `AC${randomHex(16)}`, ids: [] }),
    secret: () => randomHex(16),
    request: (url, tenant, secret) =>
      twilioRequest(
        url,
        twilioParams({ accountSid: tenant.account, messageSid: `SM${randomHex(16)}` }),
        { token: secret },
      ),
  },
  {
    channel: 'line',
    field: 'channel_secret',
    tenant: () => ({ account: `U${randomHex(16)}`, ids: [] }),
    secret: () => randomHex(16),
    request: (url, tenant, secret) =>
      lineRequest(
        url,
        lineBody(
          [lineText(lineMessageId(), 'hi', { webhookEventId: lineEventId() })],
          tenant.account,
        ),
        secret,
      ),
  },
  {
    channel: 'whatsapp-cloud',
    field: 'app_secret',
    tenant: () => ({ account: digits(15), ids: [digits(15)] }),
    secret: () => randomHex(16),
    request: (url, tenant, secret) =>
      metaRequest(
        url,
        waBatch([
          {
            phoneNumberId: tenant.ids[0] as string,
            messages: [waText(`wamid.${randomId()}`, 'hi')],
          },
        ]),
        secret,
      ),
    env: { WHATSAPP_VERIFY_TOKEN: 'wa-verify' },
  },
  {
    channel: 'messenger',
    field: 'app_secret',
    tenant: () => ({ account: digits(15), ids: [digits(15)] }),
    secret: () => randomHex(16),
    request: (url, tenant, secret) =>
      metaRequest(
        url,
        messagingBody('page', [
          {
            id: tenant.ids[0] as string,
            messaging: [messagingText(metaMid(), 'hi', { recipient: tenant.ids[0] as string })],
          },
        ]),
        secret,
      ),
    env: { MESSENGER_VERIFY_TOKEN: 'messenger-verify' },
  },
  {
    channel: 'instagram',
    field: 'app_secret',
    tenant: () => ({ account: digits(15), ids: [digits(15)] }),
    secret: () => randomHex(16),
    request: (url, tenant, secret) =>
      metaRequest(
        url,
        messagingBody('instagram', [
          {
            id: tenant.ids[0] as string,
            messaging: [messagingText(metaMid(), 'hi', { recipient: tenant.ids[0] as string })],
          },
        ]),
        secret,
      ),
    env: { INSTAGRAM_VERIFY_TOKEN: 'instagram-verify' },
  },
  {
    channel: 'wechat',
    field: 'token',
    tenant: () => ({ account: `gh_${randomHex(6)}`, ids: [] }),
    secret: () => `wx${randomHex(8)}`,
    request: (url, tenant, secret) =>
      wechatRequest(url, wechatXml(wechatText(wechatMsgId(), 'hi', { account: tenant.account })), {
        token: secret,
      }),
  },
]

/** The variables every case needs, together. */
export const CASES_ENV: Record<string, string> = Object.assign({}, ...CASES.map((c) => c.env ?? {}))
