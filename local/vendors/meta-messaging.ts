/**
 * Messenger and Instagram (Meta's Messenger Platform) fixtures: one POST carries a batch, signed
 * as Meta signs it (whatsapp-cloud.ts's metaRequest).
 * @module
 */
import { FORGED_SECRET, randomHex, type SignedDelivery, type Signing } from './common'
import { metaRequest } from './whatsapp-cloud'

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
