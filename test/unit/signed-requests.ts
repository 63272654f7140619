/**
 * Signed vendor requests for tests (the Standard Webhooks `TestPayload` idea): real HMACs with the
 * same signers the gateway verifies with, so a test fails if either side drifts. Web APIs only:
 * used by the Node unit tests and by the tests inside workerd.
 * @module
 */
import { readBoundedBody } from '../../contract/body'
import { slackSignature } from '../../worker/channels/slack'
import { TELEGRAM_SECRET_HEADER } from '../../worker/channels/telegram'
import { twilioSignature } from '../../worker/channels/twilio'
import { compactSid } from '../../worker/channels/twilio-keys'
import type { RequestParts } from '../../worker/channels/types'
import { TEST_SECRETS } from './test-secrets'

export { TEST_SECRETS }

export const nowSeconds = (): number => Math.floor(Date.now() / 1000)

export interface SlackMessageFields {
  eventId?: string | null
  appId?: string
  team?: string
  channel?: string
  ts?: string
  user?: string
  text?: string
}

/** An Events API `event_callback` carrying a plain `message` event. */
export function slackMessageEvent(fields: SlackMessageFields = {}): Record<string, unknown> {
  const ts = fields.ts ?? '1355517523.000005'
  const body: Record<string, unknown> = {
    token: 'one-long-verification-token',
    team_id: fields.team ?? 'T123ABC456',
    api_app_id: fields.appId ?? 'A123ABC456',
    event: {
      type: 'message',
      channel: fields.channel ?? 'C123ABC456',
      user: fields.user ?? 'U123ABC456',
      text: fields.text ?? 'Live long and prospect.',
      ts,
      event_ts: ts,
      channel_type: 'channel',
    },
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
/** The tag of twilioParams' default AccountSid in Redis keys (keys.test.ts checks it). */
export const TEST_ACCOUNT_TAG = 's2Ot6E1W'

/**
 * The Redis delivery key of a Twilio delivery for twilioParams' default account:
 * `dedup:{wa|sms|tw-status}:{account tag}:{compact MessageSid}[:{status}…]`.
 */
export function twilioDeliveryKey(
  namespace: 'wa' | 'sms' | 'tw-status',
  sid: string,
  ...rest: string[]
) {
  return ['dedup', namespace, TEST_ACCOUNT_TAG, compactSid(sid), ...rest].join(':')
}

export function twilioParams(fields: TwilioMessageFields = {}): Array<[string, string]> {
  const messageSid = fields.messageSid ?? 'SM0123456789abcdef0123456789abcdef'
  const params: Array<[string, string]> = [
    ['MessageSid', messageSid],
    ['SmsSid', messageSid],
    ['SmsMessageSid', messageSid],
    ['AccountSid', fields.accountSid ?? 'AC0123456789abcdef0123456789abcdef'],
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

/** What a verifier sees of a request (the body read the way the gateway reads it). */
export async function partsOf(request: Request): Promise<RequestParts> {
  return {
    url: request.url,
    headers: request.headers,
    body: await readBoundedBody(request, 1024 * 1024),
  }
}
