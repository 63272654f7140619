/**
 * The one set of vendor delivery fixtures: the payloads Slack, Twilio, Telegram, Meta (WhatsApp
 * Cloud API batches) and email send, signed the way each vendor signs them (with the gateway's own
 * signers, worker/channels/*, which the unit tests pin to the vendors' documented vectors), and
 * fresh signed deliveries that know the keys the gateway must derive from them: the delivery key
 * it claims in Redis and the message key of the row.
 *
 * Used by the Node tests, the tests inside workerd, the fault suite, the soak, the bench and
 * local/send-webhook.ts. Web APIs only (Request, Web Crypto through the signers and
 * contract/crypto.ts, crypto.getRandomValues): it runs in workerd as it runs in Node.
 *
 * The payload builders ({@link slackMessageEvent}, {@link twilioParams}, {@link telegramUpdate},
 * {@link rawEmail}) have fixed defaults that the unit tests pin; the fresh deliveries
 * ({@link slackDelivery}, {@link twilioDelivery}, {@link telegramDelivery}) pick new ids for
 * whatever they are not given.
 * @module
 */
import { exportJWK, generateKeyPair, importJWK, SignJWT } from 'jose'
import { readBoundedBody } from '../contract/body'
import { toHex } from '../contract/crypto'
import { LINE_SIGNATURE_HEADER, lineSignature } from '../worker/channels/line'
import { slackSignature } from '../worker/channels/slack'
import { BOT_FRAMEWORK_ISSUER } from '../worker/channels/teams-verify'
import { TELEGRAM_SECRET_HEADER } from '../worker/channels/telegram-verify'
import { twilioSignature } from '../worker/channels/twilio'
import { compactSid } from '../worker/channels/twilio-keys'
import type { RequestParts } from '../worker/channels/types'
import { encryptWeChat, wechatSignature } from '../worker/channels/wechat-crypto'
import { whatsappSignature } from '../worker/channels/whatsapp-cloud'

/** What a gateway is configured with, and what its deliveries are signed with. */
export interface VendorSecrets {
  slack: string
  twilio: string
  telegram: string
  /** The bot of the bare `/webhooks/telegram` path (TELEGRAM_BOT_ID). */
  telegramBotId: string
  /** ORIGIN_SHARED_SECRET. */
  origin: string
}

/** The tests' secrets (vitest.workers.config.ts writes the same values out: keep them equal). */
export const TEST_SECRETS = {
  slack: 'test-slack-signing-secret',
  twilio: 'test-twilio-auth-token',
  telegram: 'test-telegram-secret-token',
  telegramBotId: '424242',
  origin: 'test-origin-shared-secret',
} as const satisfies VendorSecrets

/** WHATSAPP_APP_SECRET and WHATSAPP_VERIFY_TOKEN of the tests' gateways (Meta's channel). */
export const WA_TEST_SECRET = 'test-whatsapp-app-secret'
export const WA_VERIFY_TOKEN = 'test-whatsapp-verify-token'

/** LINE_CHANNEL_SECRET of the tests' gateways, and the bot (`destination`) it is the secret of. */
export const LINE_TEST_SECRET = 'test-line-channel-secret'
export const LINE_DESTINATION = 'U0123456789abcdef0123456789abcdef'

/** What a forged delivery is signed with: no gateway is configured with it. */
export const FORGED_SECRET = 'not-the-configured-secret'

/**
 * The public API's key of the tests' gateways, for tenant {@link API_TEST_TENANT}; API_KEYS holds
 * only its SHA-256 ({@link API_TEST_KEY_SHA256}, test/unit/api-auth.test.ts pins the two together).
 */
export const API_TEST_KEY = 'test-api-key'
export const API_TEST_KEY_SHA256 =
  '4c806362b613f7496abf284146efd31da90e4b16169fe001841ca17290f427c4'
export const API_TEST_TENANT = 'test-tenant'

/**
 * The Worker bindings under which a gateway accepts deliveries signed with `secrets` (the test
 * secrets: WhatsApp Cloud's, LINE's, Messenger's and Instagram's too, and WeChat's two test
 * accounts).
 */
export function vendorBindings(secrets: VendorSecrets = TEST_SECRETS): Record<string, string> {
  return {
    SLACK_SIGNING_SECRET: secrets.slack,
    TWILIO_AUTH_TOKEN: secrets.twilio,
    TELEGRAM_SECRET_TOKEN: secrets.telegram,
    TELEGRAM_BOT_ID: secrets.telegramBotId,
    ...(secrets === TEST_SECRETS
      ? {
          WHATSAPP_APP_SECRET: WA_TEST_SECRET,
          WHATSAPP_VERIFY_TOKEN: WA_VERIFY_TOKEN,
          API_KEYS: JSON.stringify({ [API_TEST_KEY_SHA256]: API_TEST_TENANT }),
          LINE_CHANNEL_SECRET: LINE_TEST_SECRET,
          MESSENGER_APP_SECRET: META_TEST_SECRET,
          MESSENGER_VERIFY_TOKEN: META_VERIFY_TOKEN,
          INSTAGRAM_APP_SECRET: META_TEST_SECRET,
          INSTAGRAM_VERIFY_TOKEN: META_VERIFY_TOKEN,
          ...WECHAT_TEST_BINDINGS,
        }
      : {}),
  }
}

export const nowSeconds = (): number => Math.floor(Date.now() / 1000)

/** `bytes` random bytes as hex. */
export function randomHex(bytes: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(bytes)))
}

/** 16 random hex characters: ids unique to a test run. */
export const randomId = (): string => randomHex(8)

const randomBelow = (n: number) => Math.floor(Math.random() * n)

// ---------------------------------------------------------------------------------------------
// Slack
// ---------------------------------------------------------------------------------------------

export const SLACK_TEAM = 'T123ABC456'
export const SLACK_APP = 'A123ABC456'
export const SLACK_CHANNEL = 'C123ABC456'

export interface SlackMessageFields {
  eventId?: string | null
  appId?: string
  team?: string
  channel?: string
  ts?: string
  user?: string
  text?: string
  /** An edit (`message_changed`) made at this ts, of the message at `ts`. */
  editedAt?: string
  /** A delete (`message_deleted`) made at this ts, of the message at `ts`. */
  deletedAt?: string
  /** The text before the edit or delete. @default `text` */
  previousText?: string
}

/** An Events API `event_callback` carrying a `message` event (an edit or a delete with those fields). */
export function slackMessageEvent(fields: SlackMessageFields = {}): Record<string, unknown> {
  const ts = fields.ts ?? '1355517523.000005'
  const channel = fields.channel ?? SLACK_CHANNEL
  const user = fields.user ?? 'U123ABC456'
  const text = fields.text ?? 'Live long and prospect.'
  const previous = { type: 'message', user, text: fields.previousText ?? text, ts }
  const at = fields.editedAt ?? fields.deletedAt
  const event =
    fields.editedAt !== undefined
      ? {
          type: 'message',
          subtype: 'message_changed',
          channel,
          ts: at,
          event_ts: at,
          message: { type: 'message', user, text, ts, edited: { user, ts: at } },
          previous_message: previous,
        }
      : fields.deletedAt !== undefined
        ? {
            type: 'message',
            subtype: 'message_deleted',
            channel,
            ts: at,
            event_ts: at,
            deleted_ts: ts,
            previous_message: previous,
          }
        : { type: 'message', channel, user, text, ts, event_ts: ts, channel_type: 'channel' }
  const body: Record<string, unknown> = {
    token: 'one-long-verification-token',
    team_id: fields.team ?? SLACK_TEAM,
    api_app_id: fields.appId ?? SLACK_APP,
    event,
    type: 'event_callback',
    event_time: 1355517523,
  }
  if (fields.eventId !== null) body.event_id = fields.eventId ?? 'Ev123ABC456'
  return body
}

export interface SlackRequestOptions {
  secret?: string
  timestamp?: number
  contentType?: string
  /** Replaces the computed signature. */
  signature?: string
  headers?: Record<string, string>
}

export async function slackRequest(
  url: string,
  payload: Record<string, unknown> | string,
  options: SlackRequestOptions = {},
): Promise<Request> {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload)
  const timestamp = String(options.timestamp ?? nowSeconds())
  const signature =
    options.signature ??
    (await slackSignature(options.secret ?? TEST_SECRETS.slack, timestamp, body))
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': options.contentType ?? 'application/json',
      'x-slack-request-timestamp': timestamp,
      'x-slack-signature': signature,
      ...options.headers,
    },
    body,
  })
}

// ---------------------------------------------------------------------------------------------
// Twilio
// ---------------------------------------------------------------------------------------------

export const TWILIO_ACCOUNT = 'AC0123456789abcdef0123456789abcdef'
/**
 * The tag of {@link TWILIO_ACCOUNT} in Redis keys (worker/channels/twilio-keys.ts `accountTag`,
 * written out: Web Crypto digests are asynchronous; keys.test.ts checks it).
 */
export const TEST_ACCOUNT_TAG = 's2Ot6E1W'

/**
 * The Redis delivery key of a Twilio delivery of a tagged account (the test account unless told):
 * `dedup:{wa|sms|tw-status}:{account tag}:{compact MessageSid}[:{status}…]`.
 */
export function twilioDeliveryKey(
  namespace: 'wa' | 'sms' | 'tw-status',
  sid: string,
  ...rest: string[]
): string {
  return ['dedup', namespace, TEST_ACCOUNT_TAG, compactSid(sid), ...rest].join(':')
}

export interface TwilioMessageFields {
  accountSid?: string
  messageSid?: string
  from?: string
  to?: string
  body?: string
  status?: string
  errorCode?: string
}

/** An inbound message webhook's parameters (or a status callback's, with `status`). */
export function twilioParams(fields: TwilioMessageFields = {}): Array<[string, string]> {
  const messageSid = fields.messageSid ?? 'SM0123456789abcdef0123456789abcdef'
  const params: Array<[string, string]> = [
    ['MessageSid', messageSid],
    ['SmsSid', messageSid],
    ['SmsMessageSid', messageSid],
    ['AccountSid', fields.accountSid ?? TWILIO_ACCOUNT],
    ['From', fields.from ?? 'whatsapp:+14017122661'],
    ['To', fields.to ?? 'whatsapp:+15558675310'],
    ['Body', fields.body ?? "Ahoy! Let's build something amazing."],
    ['NumMedia', '0'],
    ['NumSegments', '1'],
  ]
  if (fields.status) params.push(['MessageStatus', fields.status])
  if (fields.errorCode) params.push(['ErrorCode', fields.errorCode])
  return params
}

export interface TwilioRequestOptions {
  token?: string
  /** The URL Twilio signed, when not the request URL (a proxy, PUBLIC_BASE_URL). */
  signedUrl?: string
  signature?: string
}

export async function twilioRequest(
  url: string,
  params: Array<[string, string]>,
  options: TwilioRequestOptions = {},
): Promise<Request> {
  const signature =
    options.signature ??
    (await twilioSignature(options.token ?? TEST_SECRETS.twilio, options.signedUrl ?? url, params))
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': signature,
    },
    body: new URLSearchParams(params).toString(),
  })
}

// ---------------------------------------------------------------------------------------------
// Telegram
// ---------------------------------------------------------------------------------------------

export interface TelegramMessageFields {
  updateId?: number
  chatId?: number
  messageId?: number
  fromId?: number
  text?: string
  date?: number
  field?: 'message' | 'edited_message' | 'channel_post' | 'edited_channel_post'
  editDate?: number
}

export function telegramUpdate(fields: TelegramMessageFields = {}): Record<string, unknown> {
  const chatId = fields.chatId ?? 111222333
  const message: Record<string, unknown> = {
    message_id: fields.messageId ?? 42,
    date: fields.date ?? 1700000000,
    chat: { id: chatId, type: 'private', first_name: 'A' },
    from: { id: fields.fromId ?? chatId, is_bot: false, first_name: 'A' },
    text: fields.text ?? 'hi',
  }
  if (fields.editDate !== undefined) message.edit_date = fields.editDate
  return { update_id: fields.updateId ?? 123456789, [fields.field ?? 'message']: message }
}

export function telegramRequest(
  url: string,
  update: Record<string, unknown> | string,
  secret: string | null = TEST_SECRETS.telegram,
): Request {
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(secret === null ? {} : { [TELEGRAM_SECRET_HEADER]: secret }),
    },
    body: typeof update === 'string' ? update : JSON.stringify(update),
  })
}

// ---------------------------------------------------------------------------------------------
// WhatsApp Cloud API (Meta): one POST carries a batch
// ---------------------------------------------------------------------------------------------

/** A text message as Meta shapes it. */
export function waText(id: string, text: string, from = '16505551234'): Record<string, unknown> {
  return { from, id, timestamp: '1749416383', type: 'text', text: { body: text } }
}

/** One change of a batch: a phone number's messages and statuses. */
export interface WaChange {
  phoneNumberId: string
  messages?: unknown[]
  statuses?: unknown[]
}

/** A webhook body with one entry per WABA and one change per phone number, as Meta batches. */
export function waBatch(changes: WaChange[], waba = '102290129340398'): Record<string, unknown> {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: waba,
        changes: changes.map((change) => ({
          field: 'messages',
          value: {
            messaging_product: 'whatsapp',
            metadata: {
              display_phone_number: '15550783881',
              phone_number_id: change.phoneNumberId,
            },
            contacts: [{ profile: { name: 'Sheena Nelson' }, wa_id: '16505551234' }],
            ...(change.messages ? { messages: change.messages } : {}),
            ...(change.statuses ? { statuses: change.statuses } : {}),
          },
        })),
      },
    ],
  }
}

/** A POST signed the way Meta signs it: the exact bytes sent, under the app secret. */
export async function metaRequest(
  url: string,
  body: Record<string, unknown> | string,
  secret = WA_TEST_SECRET,
): Promise<Request> {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-hub-signature-256': await whatsappSignature(secret, text),
    },
    body: text,
  })
}

/** A WhatsApp Cloud POST: Meta's signature. */
export const waRequest = metaRequest

/**
 * One Meta POST of `changes` (messages and statuses per phone number), signed with the test app
 * secret (or forged); every `request` is the same POST again, as Meta resends a whole batch.
 */
export function whatsappCloudPost(
  changes: WaChange[],
  signing: Signing = {},
): { request(base: string): Promise<Request> } {
  const body = waBatch(changes)
  const secret = signing.forged ? FORGED_SECRET : (signing.secret ?? WA_TEST_SECRET)
  return { request: (base) => waRequest(`${base}/webhooks/whatsapp-cloud`, body, secret) }
}

// ---------------------------------------------------------------------------------------------
// LINE Messaging API: one POST carries a batch of events
// ---------------------------------------------------------------------------------------------

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

/** A fresh `webhookEventId`: a ULID (26 characters of Crockford's base32). */
export function lineEventId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(26))
  return Array.from(bytes, (b) => CROCKFORD[b % 32]).join('')
}

/** A fresh LINE message id (decimal digits, as LINE's are). */
export const lineMessageId = (): string => `5${String(randomBelow(1e15)).padStart(15, '0')}`

/** The sender of the LINE fixtures unless told otherwise. */
export const LINE_USER = 'U4af4980629abcdef0123456789abcdef'

export interface LineEventFields {
  webhookEventId?: string
  userId?: string
  /** Milliseconds since the epoch. */
  timestamp?: number
  redelivery?: boolean
  mode?: 'active' | 'standby'
}

/** The fields every LINE event has (the webhook OpenAPI's `Event`). */
function lineEvent(type: string, fields: LineEventFields): Record<string, unknown> {
  return {
    type,
    mode: fields.mode ?? 'active',
    timestamp: fields.timestamp ?? 1_462_629_479_859,
    source: { type: 'user', userId: fields.userId ?? LINE_USER },
    webhookEventId: fields.webhookEventId ?? lineEventId(),
    deliveryContext: { isRedelivery: fields.redelivery ?? false },
  }
}

/** A message event as LINE shapes it (`message` is the message object: id, type, ...). */
export function lineMessage(
  message: Record<string, unknown>,
  fields: LineEventFields = {},
): Record<string, unknown> {
  return { ...lineEvent('message', fields), replyToken: 'nHuyWiB7yP5Zw52FIkcQobQuGDXCTA', message }
}

/** A text message event. */
export function lineText(id: string, text: string, fields: LineEventFields = {}) {
  return lineMessage({ id, type: 'text', quoteToken: 'q3Plxr4AgKd', text }, fields)
}

/** The user took message `messageId` back. */
export function lineUnsend(messageId: string, fields: LineEventFields = {}) {
  return { ...lineEvent('unsend', fields), unsend: { messageId } }
}

/** A webhook body: the bot it is for, and its events (none: the console's Verify button). */
export function lineBody(
  events: unknown[],
  destination = LINE_DESTINATION,
): Record<string, unknown> {
  return { destination, events }
}

/** A POST signed the way LINE signs it: the exact bytes sent, under the channel secret. */
export async function lineRequest(
  url: string,
  body: Record<string, unknown> | string,
  secret = LINE_TEST_SECRET,
): Promise<Request> {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json; charset=utf-8',
      [LINE_SIGNATURE_HEADER]: await lineSignature(secret, text),
    },
    body: text,
  })
}

/**
 * One LINE POST of `events` for `destination`, signed with the test channel secret (or forged);
 * every `request` is the same POST again, as LINE redelivers.
 */
export function linePost(
  events: unknown[],
  signing: Signing & { destination?: string } = {},
): { request(base: string): Promise<Request> } {
  const body = lineBody(events, signing.destination)
  const secret = signing.forged ? FORGED_SECRET : (signing.secret ?? LINE_TEST_SECRET)
  return { request: (base) => lineRequest(`${base}/webhooks/line`, body, secret) }
}

// ---------------------------------------------------------------------------------------------
// Messenger and Instagram (Meta's Messenger Platform): one POST carries a batch
// ---------------------------------------------------------------------------------------------

/** MESSENGER_APP_SECRET / INSTAGRAM_APP_SECRET and the verify token of the tests' gateways. */
export const META_TEST_SECRET = 'test-meta-app-secret'
export const META_VERIFY_TOKEN = 'test-meta-verify-token'
/** The Page (or Instagram account) of the fixtures unless told otherwise, and its user. */
export const META_PAGE = '106540352242922'
export const META_USER = '2345678901234567'

/** A fresh message id, shaped as Messenger's (`m_…`). */
export const metaMid = (): string => `m_${randomHex(24)}`

export interface MessagingFields {
  sender?: string
  recipient?: string
  /** Milliseconds since the epoch. */
  timestamp?: number
}

/** One messaging event: `what` is its payload (`{message: …}`, `{read: …}`, …). */
export function messagingEvent(what: Record<string, unknown>, fields: MessagingFields = {}) {
  return {
    sender: { id: fields.sender ?? META_USER },
    recipient: { id: fields.recipient ?? META_PAGE },
    timestamp: fields.timestamp ?? 1_458_692_752_478,
    ...what,
  }
}

/** A text message event. */
export function messagingText(mid: string, text: string, fields: MessagingFields = {}) {
  return messagingEvent({ message: { mid, text } }, fields)
}

/** One entry of a Messenger Platform POST: an account's events, and the standby ones. */
export interface MessagingEntry {
  id?: string
  messaging?: unknown[]
  standby?: unknown[]
}

/** A webhook body of `object` (`page`, `instagram`), one entry per account. */
export function messagingBody(object: string, entries: MessagingEntry[]): Record<string, unknown> {
  return {
    object,
    entry: entries.map((entry) => ({
      id: entry.id ?? META_PAGE,
      time: 1_458_692_752_478,
      ...(entry.messaging ? { messaging: entry.messaging } : {}),
      ...(entry.standby ? { standby: entry.standby } : {}),
    })),
  }
}

// ---------------------------------------------------------------------------------------------
// WeChat Official Accounts: XML, signed in the query, optionally AES-encrypted
// ---------------------------------------------------------------------------------------------

/** The tests' Official Account (its `gh_` original id: the path and every push's ToUserName). */
export const WECHAT_ACCOUNT = 'gh_0123456789ab'
export const WECHAT_TEST_TOKEN = 'testwechattoken'
/** An EncodingAESKey (43 characters) and the AppID its plaintexts end with. */
export const WECHAT_TEST_AES_KEY = 'TestWeChatEncodingAesKey0123456789abcdefABC'
export const WECHAT_TEST_APP_ID = 'wx0123456789abcdef'

/** The tests' encrypting account (safe mode: it takes encrypted pushes only). */
export const WECHAT_AES_ACCOUNT = 'gh_0123456789ae'

/** WECHAT_ACCOUNT in plain mode, WECHAT_AES_ACCOUNT in safe mode, as the Worker's bindings. */
export const WECHAT_TEST_BINDINGS = {
  WECHAT_TOKENS_BY_ACCOUNT: `${WECHAT_ACCOUNT}=${WECHAT_TEST_TOKEN},${WECHAT_AES_ACCOUNT}=${WECHAT_TEST_TOKEN}`,
  WECHAT_AES_KEYS_BY_ACCOUNT: `${WECHAT_AES_ACCOUNT}=${WECHAT_TEST_AES_KEY}`,
  WECHAT_APP_IDS_BY_ACCOUNT: `${WECHAT_AES_ACCOUNT}=${WECHAT_TEST_APP_ID}`,
}

/** A push's fields, in WeChat's order; strings become CDATA, digits stay bare. */
export type WeChatFields = Record<string, string>

/** A text message as WeChat pushes it (MsgId a 64-bit decimal, beyond 2^53). */
export function wechatText(
  msgId: string,
  content: string,
  fields: { account?: string; from?: string; createTime?: number } = {},
): WeChatFields {
  return {
    ToUserName: fields.account ?? WECHAT_ACCOUNT,
    FromUserName: fields.from ?? 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o',
    CreateTime: String(fields.createTime ?? nowSeconds()),
    MsgType: 'text',
    Content: content,
    MsgId: msgId,
  }
}

/** A fresh MsgId: 19 digits, as WeChat's are. */
export const wechatMsgId = (): string =>
  `6${String(randomBelow(1e9)).padStart(9, '0')}${String(randomBelow(1e9)).padStart(9, '0')}`

export function wechatXml(fields: WeChatFields): string {
  const element = ([name, value]: [string, string]) =>
    /^\d+$/.test(value) ? `<${name}>${value}</${name}>` : `<${name}><![CDATA[${value}]]></${name}>`
  return `<xml>${Object.entries(fields).map(element).join('')}</xml>`
}

/** How a push is signed: plain (`signature`), or encrypted with an EncodingAESKey. */
export interface WeChatSigning {
  token?: string
  /** Encrypted mode (`encrypt_type=aes`, `msg_signature`) under this key. */
  aesKey?: string
  appId?: string
  timestamp?: number
  nonce?: string
}

/** A push as WeChat POSTs it to `url`: signed in the query, the XML (or its envelope) the body. */
export async function wechatRequest(
  url: string,
  xml: string,
  signing: WeChatSigning = {},
): Promise<Request> {
  const token = signing.token ?? WECHAT_TEST_TOKEN
  const timestamp = String(signing.timestamp ?? nowSeconds())
  const nonce = signing.nonce ?? String(randomBelow(2 ** 31))
  const query = new URLSearchParams({
    signature: await wechatSignature([token, timestamp, nonce]),
    timestamp,
    nonce,
    openid: 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o',
  })
  let body = xml
  if (signing.aesKey) {
    const encrypt = await encryptWeChat(xml, signing.aesKey, signing.appId ?? WECHAT_TEST_APP_ID)
    query.set('encrypt_type', 'aes')
    query.set('msg_signature', await wechatSignature([token, timestamp, nonce, encrypt]))
    const to = /<ToUserName><!\[CDATA\[([^\]]*)\]\]>/.exec(xml)?.[1] ?? ''
    body = `<xml><ToUserName><![CDATA[${to}]]></ToUserName><Encrypt><![CDATA[${encrypt}]]></Encrypt></xml>`
  }
  return new Request(`${url}?${query}`, {
    method: 'POST',
    headers: { 'content-type': 'text/xml' },
    body,
  })
}

// ---------------------------------------------------------------------------------------------
// Microsoft Teams (Bot Framework)
// ---------------------------------------------------------------------------------------------

/** Two bots' Microsoft App IDs (the tenants of the Teams tests). */
export const TEAMS_APP = '8e0b5c8c-1f4e-4b7a-9d6a-3c2f1e0d9b8a'
export const TEAMS_OTHER_APP = '1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d'
export const TEAMS_SERVICE_URL = 'https://smba.trafficmanager.net/amer/'
/** The default activity's conversation (a personal chat), and its tag in the keys (pinned). */
export const TEAMS_CONVERSATION = 'a:1XyZpersonalchat'
export const TEAMS_CONVERSATION_TAG = 'cd0253d5e7495731c'

/**
 * A signing key pair as Microsoft's JWKS would list it (with `endorsements`), to mint Bot
 * Framework tokens locally: there is no official test vector (the doc says to test so).
 */
export interface TeamsSigner {
  kid: string
  privateKey: CryptoKey
  /** Its public JWK as a JWKS entry. */
  jwk: Record<string, unknown>
}

export async function teamsSigner(
  kid = `key-${randomId()}`,
  endorsements: readonly string[] = ['msteams'],
): Promise<TeamsSigner> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...(await exportJWK(publicKey)), kid, use: 'sig', endorsements }
  return { kid, privateKey, jwk }
}

/**
 * A fixed development key pair for `send-webhook teams` (RS256; development only, never trusted
 * anywhere real: it is public in this repository). Fixed, so that the keys a local Worker cached
 * stay the ones the next run signs with.
 */
export const TEAMS_DEV_KEY = {
  kty: 'RSA',
  n: '0wKjC8qpi5DvsHHVlsNFOjDJl7f7fOmwIxEA5YCKLpeGX_yafq5FDt-JR79lri-Gr6d9B1Lp047tSQAYWw4WR0X3MlL0kKR1_uRb8vLhW0J220fkXPV-boflsQpBA6IPFhwiBhzAcu6Rbi1mcgiWeigCkmgmYrbOeoEBy1JMm8qvbiX3Zo5pLS9mZkSO8H4cHts5GVZRjm1qyRk5K-PhS9_bVMEQTtpc8zC4z8ShUYm-17-4S_ZKNepSvVib0g2TJnGVgCHPWnWWGOAcBRr0Qs5rdK-bBQZBM6AjW5z7C6FS93_LIg2OGSxVr9BtxmP1MgqGJI1ax2IRzJBPA3Dt6Q',
  e: 'AQAB',
  d: 'E_nDGKnXXMHcRwOybiLPP2qAncR04jGMk01CnKILXXd1E59_ZVsMaOjgKfLPEUB-NiEbdMw0cZWCwMSUXwOu4pFs4jk4iNGLkBVAinfUE1vFPQ4JwC5yCSGurLtlReRGHFg5H64CHqnstOrxsKg_zTxTaKvDvS2ZehRovehCc1mpNP2KWag5izgp9gAemMr41aLSuxrR7e102hog5qUYmfal-6UUyiaups2HEvzPOKMaiRdiiPDUG1iESP5dshd-zuZn-vSI_UUszOeNdAstxPBWsnWRRB34jVqXYYianACDMqmU5vlH989uQHRnWfTBfkoQYjDVEkvfPDlRmTFqpw',
  p: '75f47F0druk94qa1mVQhY2eSFswzErOjYUTkfMOK9pUA7LgRC9CmhyGrgkqZkUuJIfecMH15sFR570oH1OgGXXlmlqdr7flzQdb5fQWFghruB0tJwjC5aIcbq8a7-B-IAjVQpgR0bbQ5JYEU4i7w86S0VUa5YfFAvUrTO0P1ZHM',
  q: '4XWaucTYVihkXlZChfi5xTNHt0aoSBZV-X9L6yWXaaK3rgfn4ETCXUb7DqAhmRRQYUjItNFI0ksLp3pw25TjgEMsx96t3S2d29KIRe3ZYrf9Ee1Eb4UBG9mJMFmstIadikHy-X3sy7S6fahlVAYHUBKspIPaV9halKVBrotKqTM',
  dp: 'B3gKV3vzn-8_caBWyufXfpzM7g8BjJSzBCY8pTMHUvaEJ9z5ExA3EMFY8l_W97OOG9P3N3_B2mBXyMDbC6UMBb_yFcI0WB_NmwDTmDUi21JxlyKeswIH1Z1YnHs-gtagy8jTsckzw_O5UFT8zKw_8KhywrHIt6fop738Zb2Rmcc',
  dq: 'COj66miLHCyQeuHx0xWXUeHK7cVPFTo8v5V2TJ65syUJGUmaslRFUiZh-Zv-d-xDmPSlae_zbswkc8P0_diOfR0qgeOc_2a0HGHfnNPfiXU3_SNhVv7soksgjtacaq3_P92HWrDNUOedjyW-i2mJlHKIfB_x2xLj0YgOZnV-x90',
  qi: '34AvV2NFn0rbODhKSxkn_BFhki47WHW11XnylkGyZ6ZxwOVDJ8O-bvrN-OldFsmYEnWVGN50AmQ6yMlG06XMbFSFmo0QSaxqbMCTbDs8DylRfAZaDLFAJuTcOFFKxNAWutuQnAJLVnx01GrSxaO67uf9eLyKmHTf_PHRAxYGRiM',
} as const

/** The development signer ({@link TEAMS_DEV_KEY}), kid `dev-key`, endorsing msteams. */
export async function teamsDevSigner(): Promise<TeamsSigner> {
  const privateKey = (await importJWK({ ...TEAMS_DEV_KEY }, 'RS256')) as CryptoKey
  const { kty, n, e } = TEAMS_DEV_KEY
  const jwk = { kty, n, e, kid: 'dev-key', use: 'sig', endorsements: ['msteams'] }
  return { kid: 'dev-key', privateKey, jwk }
}

/** The OpenID metadata and JWKS documents of `signers`, as login.botframework.com serves them. */
export function teamsKeyDocuments(jwksUrl: string, signers: readonly TeamsSigner[]) {
  return {
    metadata: {
      issuer: BOT_FRAMEWORK_ISSUER,
      jwks_uri: jwksUrl,
      id_token_signing_alg_values_supported: ['RS256'],
    },
    jwks: { keys: signers.map((signer) => signer.jwk) },
  }
}

export interface TeamsTokenClaims {
  aud?: string
  iss?: string
  serviceUrl?: string | null
  /** Seconds from now. */
  expiresIn?: number
  /** The header's kid (default the signer's). */
  kid?: string
}

/** A Connector → bot token as the Bot Framework signs it (RS256, 1 h, `serviceurl` claim). */
export function teamsToken(signer: TeamsSigner, claims: TeamsTokenClaims = {}): Promise<string> {
  const now = nowSeconds()
  const serviceUrl = claims.serviceUrl === undefined ? TEAMS_SERVICE_URL : claims.serviceUrl
  return new SignJWT(serviceUrl === null ? {} : { serviceurl: serviceUrl })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: claims.kid ?? signer.kid })
    .setIssuer(claims.iss ?? BOT_FRAMEWORK_ISSUER)
    .setAudience(claims.aud ?? TEAMS_APP)
    .setIssuedAt(now - 60)
    .setNotBefore(now - 60)
    .setExpirationTime(now + (claims.expiresIn ?? 3600))
    .sign(signer.privateKey)
}

export interface TeamsActivityFields {
  type?: string
  /** null: no id at all. */
  id?: string | null
  text?: string
  eventType?: string
  from?: string
  timestamp?: string
  channelId?: string
  serviceUrl?: string
  attachments?: unknown[]
  appId?: string
  conversation?: string
}

/** A Teams activity shaped like the Bot Framework's examples (a personal chat with the bot). */
export function teamsActivity(fields: TeamsActivityFields = {}): Record<string, unknown> {
  const appId = fields.appId ?? TEAMS_APP
  return {
    type: fields.type ?? 'message',
    ...(fields.id === null
      ? {}
      : { id: fields.id ?? String(1_700_000_000_000 + randomBelow(1e9)) }),
    timestamp: fields.timestamp ?? new Date().toISOString(),
    localTimestamp: fields.timestamp ?? new Date().toISOString(),
    serviceUrl: fields.serviceUrl ?? TEAMS_SERVICE_URL,
    channelId: fields.channelId ?? 'msteams',
    from: {
      id: fields.from ?? '29:1AbCdEfGhIjKlMnOp',
      name: 'Ada Lovelace',
      aadObjectId: 'c9f4a1d2-0000-4000-8000-000000000001',
    },
    conversation: {
      conversationType: 'personal',
      tenantId: 'f1e2d3c4-0000-4000-8000-000000000002',
      id: fields.conversation ?? TEAMS_CONVERSATION,
    },
    recipient: { id: `28:${appId}`, name: 'Inbound Bot' },
    textFormat: 'plain',
    ...(fields.text === undefined && fields.type === 'messageDelete'
      ? {}
      : { text: fields.text ?? 'hello from teams' }),
    ...(fields.attachments ? { attachments: fields.attachments } : {}),
    entities: [{ type: 'clientInfo', locale: 'en-US', country: 'US', platform: 'Web' }],
    channelData: {
      tenant: { id: 'f1e2d3c4-0000-4000-8000-000000000002' },
      ...(fields.eventType ? { eventType: fields.eventType } : {}),
    },
    locale: 'en-US',
  }
}

/** A POST of `activity` to `url` with `Authorization: Bearer {token}`. */
export function teamsRequest(
  url: string,
  activity: Record<string, unknown> | string,
  token: string | null,
): Request {
  const text = typeof activity === 'string' ? activity : JSON.stringify(activity)
  return new Request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body: text,
  })
}

// ---------------------------------------------------------------------------------------------
// Email
// ---------------------------------------------------------------------------------------------

export interface EmailFixture {
  from?: string
  to?: string
  subject?: string
  /** Without angle brackets; null = no Message-ID header. */
  messageId?: string | null
  date?: string | null
  text?: string
  html?: string
  inReplyTo?: string
  references?: string[]
  /** Extra header lines placed on top, like relays add them (Received, ARC, ...). */
  traceHeaders?: string[]
}

/** The address the email fixtures send from unless told otherwise. */
export const CUSTOMER = 'ada@customer.example'
/** The mailbox they are sent to unless told otherwise. */
export const MAILBOX = 'support@inbound.example'

export function uniqueMessageId(domain = 'mail.example.com'): string {
  return `${randomHex(8)}.${Date.now()}@${domain}`
}

/** A raw RFC 5322 message with CRLF line ends, as it travels over SMTP; a unique Message-ID unless told. */
export function rawEmail(fixture: EmailFixture = {}): string {
  const messageId = fixture.messageId === undefined ? uniqueMessageId() : fixture.messageId
  const headers = [
    ...(fixture.traceHeaders ?? []),
    `From: ${fixture.from ?? `"Ada Customer" <${CUSTOMER}>`}`,
    `To: ${fixture.to ?? MAILBOX}`,
    `Subject: ${fixture.subject ?? 'Order 1234 has not arrived'}`,
    ...(fixture.date === null
      ? []
      : [`Date: ${fixture.date ?? 'Tue, 27 Aug 2024 08:49:44 -0700'}`]),
    ...(messageId === null ? [] : [`Message-ID: <${messageId}>`]),
    ...(fixture.inReplyTo ? [`In-Reply-To: <${fixture.inReplyTo}>`] : []),
    ...(fixture.references
      ? [`References: ${fixture.references.map((r) => `<${r}>`).join(' ')}`]
      : []),
    'MIME-Version: 1.0',
  ]
  if (fixture.html !== undefined) {
    headers.push('Content-Type: text/html; charset="utf-8"')
    return `${headers.join('\r\n')}\r\n\r\n${fixture.html}\r\n`
  }
  headers.push('Content-Type: text/plain; charset="utf-8"')
  const text = fixture.text ?? 'Hello, my order has not arrived yet.\r\nCan you help?'
  return `${headers.join('\r\n')}\r\n\r\n${text}\r\n`
}

/**
 * The mail handed to the Worker's `email()` handler through Miniflare's `/cdn-cgi/handler/email`
 * (the runtime's own message object; it needs a Message-ID and a From).
 */
export function emailRequest(base: string, raw: string, envelope: { from: string; to?: string }) {
  const query = new URLSearchParams({ from: envelope.from, to: envelope.to ?? MAILBOX })
  return new Request(`${base}/cdn-cgi/handler/email?${query}`, { method: 'POST', body: raw })
}

// ---------------------------------------------------------------------------------------------
// Fresh signed deliveries
// ---------------------------------------------------------------------------------------------

/** One vendor delivery and the keys the gateway must derive from it. */
export interface SignedDelivery {
  /** `messages.channel` of its row. */
  channel:
    | 'slack'
    | 'whatsapp'
    | 'sms'
    | 'telegram'
    | 'line'
    | 'messenger'
    | 'instagram'
    | 'wechat'
    | 'teams'
  /** `messages.channel_message_id` of its row. */
  messageKey: string
  /** The Redis claim key (without REDIS_KEY_PREFIX). */
  deliveryKey: string
  /**
   * One attempt at the gateway at `base`, signed now: every call is the same delivery again (a
   * vendor retry); a Slack retry carries `x-slack-retry-num` and `x-slack-retry-reason`.
   */
  request(base: string, attempt?: { retry: number; reason: string }): Promise<Request>
}

/** How a fresh delivery is signed. */
export interface Signing {
  /** The vendor secret it is signed with. @default the test secret of its vendor */
  secret?: string
  /** Signed with {@link FORGED_SECRET}: the gateway must refuse it. */
  forged?: boolean
}

/** A Slack message (or its edit or delete), with a fresh `event_id` and `ts` unless given. */
export function slackDelivery(fields: SlackMessageFields & Signing = {}): SignedDelivery {
  const eventId = fields.eventId ?? `Ev${randomId()}`
  const ts = fields.ts ?? `${nowSeconds()}.${String(randomBelow(1e6)).padStart(6, '0')}`
  const body = slackMessageEvent({ ...fields, eventId, ts })
  const secret = fields.forged ? FORGED_SECRET : (fields.secret ?? TEST_SECRETS.slack)
  return {
    channel: 'slack',
    messageKey: `${fields.team ?? SLACK_TEAM}:${fields.channel ?? SLACK_CHANNEL}:${ts}`,
    deliveryKey: `dedup:slack:${fields.appId ?? SLACK_APP}:${eventId}`,
    request: (base, attempt) =>
      slackRequest(`${base}/webhooks/slack`, body, {
        secret,
        ...(attempt && attempt.retry > 0
          ? {
              headers: {
                'x-slack-retry-num': String(attempt.retry),
                'x-slack-retry-reason': attempt.reason,
              },
            }
          : {}),
      }),
  }
}

/**
 * A Twilio message (WhatsApp unless `from` is a plain number) or, with `status`, a status
 * callback, with a fresh `MessageSid` unless given.
 */
export function twilioDelivery(
  fields: TwilioMessageFields &
    Signing & {
      /** Twilio signs the public URL: PUBLIC_BASE_URL of the gateway, when it has one. */
      publicBaseUrl?: string
    } = {},
): SignedDelivery {
  const sid = fields.messageSid ?? `SM${randomHex(16)}`
  const account = fields.accountSid ?? TWILIO_ACCOUNT
  const params = twilioParams({ ...fields, messageSid: sid, accountSid: account })
  const channel = (fields.from ?? 'whatsapp:').startsWith('whatsapp:') ? 'whatsapp' : 'sms'
  const token = fields.forged ? FORGED_SECRET : (fields.secret ?? TEST_SECRETS.twilio)
  return {
    channel,
    messageKey: `${account}:${sid}`,
    get deliveryKey() {
      // Another account's tag is a SHA-256 away (asynchronous); no caller needs it yet.
      if (account !== TWILIO_ACCOUNT) throw new Error('delivery keys are known for TWILIO_ACCOUNT')
      if (!fields.status) return twilioDeliveryKey(channel === 'whatsapp' ? 'wa' : 'sms', sid)
      const errorCode = fields.errorCode ? [fields.errorCode] : []
      return twilioDeliveryKey('tw-status', sid, fields.status, ...errorCode)
    },
    request: (base) => {
      const path = '/webhooks/twilio'
      const signedUrl = fields.publicBaseUrl ? `${fields.publicBaseUrl}${path}` : undefined
      return twilioRequest(`${base}${path}`, params, { token, signedUrl })
    },
  }
}

/**
 * A Telegram message (or its edit, with `editDate` and `field: 'edited_message'`), with a fresh
 * `update_id` and chat unless given, to the bot of the bare path unless `bot` names another.
 */
export function telegramDelivery(
  fields: TelegramMessageFields &
    Signing & {
      /** A bot of its own path `/webhooks/telegram/{bot}`. */
      bot?: string
      /** The bot of the bare path. @default TEST_SECRETS.telegramBotId */
      botId?: string
    } = {},
): SignedDelivery {
  const updateId = fields.updateId ?? randomBelow(2 ** 31)
  const chatId = fields.chatId ?? randomBelow(2 ** 40)
  const messageId = fields.messageId ?? 42
  const update = telegramUpdate({ ...fields, updateId, chatId, messageId })
  const bot = fields.bot ?? fields.botId ?? TEST_SECRETS.telegramBotId
  const secret = fields.forged ? FORGED_SECRET : (fields.secret ?? TEST_SECRETS.telegram)
  const path = fields.bot === undefined ? '/webhooks/telegram' : `/webhooks/telegram/${fields.bot}`
  return {
    channel: 'telegram',
    messageKey: `${bot}:${chatId}:${messageId}`,
    deliveryKey: `dedup:telegram:${bot}:${updateId}`,
    request: async (base) => telegramRequest(`${base}${path}`, update, secret),
  }
}

/** A LINE text message as its own POST, with a fresh `webhookEventId` and message id unless given. */
export function lineDelivery(
  fields: Signing & { text?: string; messageId?: string; webhookEventId?: string } = {},
): SignedDelivery {
  const messageId = fields.messageId ?? lineMessageId()
  const eventId = fields.webhookEventId ?? lineEventId()
  const event = lineText(messageId, fields.text ?? 'hello', { webhookEventId: eventId })
  return {
    channel: 'line',
    messageKey: `${LINE_DESTINATION}:${messageId}`,
    deliveryKey: `dedup:line:${LINE_DESTINATION}:${eventId}`,
    request: linePost([event], fields).request,
  }
}

/** A Messenger (`page`) or Instagram text message as its own POST, with a fresh `mid` unless given. */
export function messagingDelivery(
  channel: 'messenger' | 'instagram',
  fields: Signing & { text?: string; mid?: string; sender?: string } = {},
): SignedDelivery {
  const mid = fields.mid ?? metaMid()
  const event = messagingText(mid, fields.text ?? 'hello', { sender: fields.sender })
  const body = messagingBody(channel === 'messenger' ? 'page' : 'instagram', [
    { messaging: [event] },
  ])
  const secret = fields.forged ? FORGED_SECRET : (fields.secret ?? META_TEST_SECRET)
  return {
    channel,
    messageKey: `${META_PAGE}:${mid}`,
    deliveryKey: `dedup:${channel}:${META_PAGE}:${mid}`,
    request: (base) => metaRequest(`${base}/webhooks/${channel}`, body, secret),
  }
}

/**
 * A WeChat text message with a fresh MsgId unless given, to `/webhooks/wechat/{account}`; every
 * `request` is signed anew (WeChat's retries carry a new timestamp and nonce; encrypted, a new
 * ciphertext too).
 */
export function wechatDelivery(
  fields: { msgId?: string; text?: string; account?: string } & Signing & WeChatSigning = {},
): SignedDelivery {
  const msgId = fields.msgId ?? wechatMsgId()
  const account = fields.account ?? WECHAT_ACCOUNT
  const xml = wechatXml(wechatText(msgId, fields.text ?? 'hi', { account }))
  const token = fields.forged ? FORGED_SECRET.replace(/-/g, '') : (fields.secret ?? fields.token)
  return {
    channel: 'wechat',
    messageKey: `${account}:${msgId}`,
    deliveryKey: `dedup:wechat:${account}:${msgId}`,
    request: (base) =>
      wechatRequest(`${base}/webhooks/wechat/${account}`, xml, {
        ...fields,
        ...(token ? { token } : {}),
      }),
  }
}

/**
 * A Teams message activity with a fresh id unless given, its token signed now by the development
 * key (TEAMS_DEV_KEY: the gateway must serve its JWKS), or forged: signed by another key under the
 * same kid.
 */
export function teamsDelivery(
  fields: TeamsActivityFields & { forged?: boolean } = {},
): SignedDelivery {
  const id = fields.id ?? String(1_700_000_000_000 + randomBelow(1e12))
  const activity = teamsActivity({ ...fields, id })
  const appId = fields.appId ?? TEAMS_APP
  // Its keys are known without hashing: the default conversation's tag is pinned.
  if (fields.conversation !== undefined)
    throw new Error('teamsDelivery: the default conversation only')
  const key = `msteams:${TEAMS_CONVERSATION_TAG}:${id}`
  const signer = async () => {
    const dev = await teamsDevSigner()
    return fields.forged ? { ...(await teamsSigner(dev.kid)), kid: dev.kid } : dev
  }
  return {
    channel: 'teams',
    messageKey: `${appId}:${key}`,
    deliveryKey: `dedup:teams:${appId}:${key}`,
    request: async (base) =>
      teamsRequest(
        `${base}/webhooks/teams`,
        activity,
        await teamsToken(await signer(), { aud: appId }),
      ),
  }
}

/** What a verifier sees of a request (the body read the way the gateway reads it). */
export async function partsOf(request: Request): Promise<RequestParts> {
  return {
    url: request.url,
    headers: request.headers,
    body: await readBoundedBody(request, 1024 * 1024),
  }
}

// ---------------------------------------------------------------------------------------------
// Our own API (POST /v1/messages)

/** One user action of an API client: the same Idempotency-Key on every attempt. */
export interface ApiDelivery {
  channel: 'api'
  /** `messages.channel_message_id` of its row (a plain key is its own part). */
  messageKey: string
  /** The Idempotency-Key, unquoted. */
  key: string
  /** One attempt at the gateway at `base`: the same request again (a client retry). */
  request(base: string): Promise<Request>
}

export interface ApiMessageFields {
  /** `[A-Za-z0-9_-]`, at most 64 (then it is its own message key part). @default a fresh one */
  key?: string
  text?: string
  customerId?: string
  /** Sent with a key no gateway is configured with: 401, nothing written. */
  forged?: boolean
}

export function apiDelivery(fields: ApiMessageFields = {}): ApiDelivery {
  const key = fields.key ?? `k-${randomId()}`
  const body = JSON.stringify({
    customer: { id: fields.customerId ?? 'api-customer-1' },
    text: fields.text ?? `hello ${key}`,
  })
  return {
    channel: 'api',
    key,
    messageKey: `${API_TEST_TENANT}:${key}`,
    request: async (base) =>
      new Request(`${base}/v1/messages`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${fields.forged ? FORGED_SECRET : API_TEST_KEY}`,
          'content-type': 'application/json',
          'idempotency-key': `"${key}"`,
        },
        body,
      }),
  }
}
