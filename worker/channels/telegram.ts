/**
 * Telegram Bot API webhooks.
 *
 * Keys (see README's key table):
 * - delivery: `dedup:telegram:{bot id}:{update_id}`. `update_id` is unique per bot only, and after
 *   a week of silence the next one is random: a set of seen ids with a TTL, never "below the last".
 * - message: `{chat.id}:{message_id}` (message ids are unique per chat only); an edit has the same
 *   key, kind `edit`, time `edit_date`.
 * @module
 */
import { timingSafeEqual } from '../../contract/crypto'
import type { InboundEventDraft } from '../../contract/event'
import type { RawBody } from '../body'
import { InvalidPayloadError } from '../errors'
import {
  type ChannelDelivery,
  type DeliveryKey,
  formatDeliveryKey,
  isoFromUnixSeconds,
  obj,
  type RequestParts,
  str,
  type Verdict,
} from './types'

export const TELEGRAM_SECRET_HEADER = 'x-telegram-bot-api-secret-token'

/** A shared secret, not an HMAC: no body integrity and no timestamp (dedup is the replay guard). */
export async function verifyTelegram(
  parts: RequestParts,
  secretTokens: readonly string[],
): Promise<Verdict> {
  // Rule 1: the header Telegram sends when the webhook was set with a secret_token.
  const offered = parts.headers.get(TELEGRAM_SECRET_HEADER)
  if (!offered) return { ok: false, reason: 'missing_headers' }
  // Rule 2: any configured token may match (rotation), compared in constant time; every token is
  // compared, so the time taken does not say which one matched.
  let matched = false
  for (const token of secretTokens) matched = timingSafeEqual(token, offered) || matched
  return matched ? { ok: true } : { ok: false, reason: 'secret_mismatch' }
}

export type TelegramUpdate = Record<string, unknown>

export function parseTelegram(body: RawBody): TelegramUpdate {
  let parsed: unknown
  try {
    parsed = JSON.parse(body.text)
  } catch (err) {
    throw new InvalidPayloadError('telegram body is not valid JSON', { cause: err })
  }
  const update = obj(parsed)
  if (!update) throw new InvalidPayloadError('telegram update is not an object')
  return update
}

/** The update fields that carry a message, and what each means for the stored row. */
const MESSAGE_FIELDS = {
  message: 'message',
  channel_post: 'message',
  edited_message: 'edit',
  edited_channel_post: 'edit',
} as const

export function classifyTelegram(update: TelegramUpdate, botId: string): ChannelDelivery {
  const updateId = update.update_id
  if (typeof updateId !== 'number' || !Number.isSafeInteger(updateId) || updateId < 0) {
    throw new InvalidPayloadError('telegram update without a valid update_id')
  }
  const field = (Object.keys(MESSAGE_FIELDS) as Array<keyof typeof MESSAGE_FIELDS>).find(
    (name) => update[name] !== undefined,
  )
  // callback_query, my_chat_member, polls, ...: verified, acknowledged, not messages.
  if (!field) return { action: 'ignore', reason: 'telegram_not_a_message' }

  const message = obj(update[field])
  const chat = obj(message?.chat)
  const chatId = chat?.id
  const messageId = message?.message_id
  if (!message || !isId(chatId) || !isId(messageId)) {
    throw new InvalidPayloadError(`telegram ${field} without chat.id / message_id`)
  }
  const senderId = obj(message.from)?.id ?? obj(message.sender_chat)?.id ?? chatId
  if (!isId(senderId)) throw new InvalidPayloadError(`telegram ${field} without a sender id`)

  const kind = MESSAGE_FIELDS[field]
  const occurredAt = isoFromUnixSeconds(
    kind === 'edit' ? (message.edit_date ?? message.date) : message.date,
  )
  if (!occurredAt) throw new InvalidPayloadError(`telegram ${field} without a date`)

  const key: DeliveryKey = { namespace: 'telegram', scope: botId, id: String(updateId) }
  const draft: InboundEventDraft = {
    kind,
    channel: 'telegram',
    tenant: botId,
    deliveryKey: formatDeliveryKey(key),
    messageKey: `${chatId}:${messageId}`,
    sender: { externalId: String(senderId), ...displayName(message) },
    body: str(message.text) ?? str(message.caption) ?? '',
    occurredAt,
  }
  return { action: 'forward', key, draft }
}

/** Chat and user ids are integers (up to 52 bits; channels are negative). */
function isId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value)
}

function displayName(message: Record<string, unknown>): { displayName?: string } {
  const from = obj(message.from)
  const name =
    [str(from?.first_name), str(from?.last_name)].filter(Boolean).join(' ') ||
    str(obj(message.sender_chat)?.title) ||
    str(message.author_signature)
  return name ? { displayName: name.slice(0, 256) } : {}
}
