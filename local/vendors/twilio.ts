/**
 * Twilio's fixtures: a message webhook's (or a status callback's) parameters, signed as Twilio
 * signs them, the delivery keys they make, and a fresh delivery.
 * @module
 */
import { twilioSignature } from '../../worker/channels/twilio'
import { compactSid } from '../../worker/channels/twilio-keys'
import { FORGED_SECRET, randomHex, type SignedDelivery, type Signing, TEST_SECRETS } from './common'

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
