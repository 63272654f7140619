/**
 * LINE Messaging API fixtures: one POST carries a batch of events, signed as LINE signs it.
 * @module
 */
import { LINE_SIGNATURE_HEADER, lineSignature } from '../../worker/channels/line'
import { FORGED_SECRET, randomBelow, type SignedDelivery, type Signing } from './common'

/** LINE_CHANNEL_SECRET of the tests' gateways, and the bot (`destination`) it is the secret of. */
export const LINE_TEST_SECRET = 'test-line-channel-secret'
export const LINE_DESTINATION = 'U0123456789abcdef0123456789abcdef'

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
