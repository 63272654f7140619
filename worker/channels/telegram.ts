/**
 * Telegram Bot API webhooks.
 *
 * Keys (see README's key table):
 * - delivery: `dedup:telegram:{bot id}:{update_id}`. `update_id` is unique per bot only, and after
 *   a week of silence the next one is random: a set of seen ids with a TTL, never "below the last".
 * - message: `{bot id}:{chat.id}:{message_id}` (message ids are unique per chat only, chats are
 *   the bot's); a business message `{bot id}:biz:{business_connection_id}:{chat.id}:{message_id}`
 *   (a business chat may share its id with a bot chat). An edit has the same key, kind `edit`, time
 *   `edit_date` and `editSeq` = `update_id` (edits within one second are ordered by it).
 * - service messages (members joined, title changed, pinned, ...) are recorded, never forwarded;
 *   the business account's own messages in its chats are ignored (like a bot's echoes).
 * @module
 */

import type { RawBody } from '../../contract/body'
import { timingSafeEqual } from '../../contract/crypto'
import type { InboundEventDraft } from '../../contract/event'
import { TELEGRAM_BOT_ID_PATTERN } from '../config'
import { InvalidPayloadError } from '../errors'
import { type TenantSecrets, type TenantVerdict, verifyForTenant } from '../tenants'
import {
  type ChannelDelivery,
  type DeliveryKey,
  formatDeliveryKey,
  isKeyPart,
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

/**
 * Verifies with the tokens of the bot the path names (the Update names no bot); a bot id that is
 * not configured, or not a bot id at all, has no tokens: 401.
 */
export function verifyTelegramBot(
  parts: RequestParts,
  secretTokens: TenantSecrets,
  botId: string | null,
): Promise<TenantVerdict> {
  const bot = botId !== null && TELEGRAM_BOT_ID_PATTERN.test(botId) ? botId : null
  return verifyForTenant(secretTokens, bot, (tokens) => verifyTelegram(parts, tokens))
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
  business_message: 'message',
  edited_business_message: 'edit',
} as const

/**
 * Message fields that make it a service message (no one wrote it): the Bot API's list (see
 * docs vendor-protocols-2 §2.2). A message with text or a caption is never one.
 */
const SERVICE_FIELDS = [
  'new_chat_members',
  'left_chat_member',
  'new_chat_title',
  'new_chat_photo',
  'delete_chat_photo',
  'group_chat_created',
  'supergroup_chat_created',
  'channel_chat_created',
  'migrate_to_chat_id',
  'migrate_from_chat_id',
  'message_auto_delete_timer_changed',
  'pinned_message',
  'invoice',
  'successful_payment',
  'refunded_payment',
  'users_shared',
  'chat_shared',
  'gift',
  'unique_gift',
  'gift_upgrade_sent',
  'connected_website',
  'write_access_allowed',
  'passport_data',
  'proximity_alert_triggered',
  'boost_added',
  'chat_background_set',
  'checklist_tasks_done',
  'checklist_tasks_added',
  'forum_topic_created',
  'forum_topic_edited',
  'forum_topic_closed',
  'forum_topic_reopened',
  'general_forum_topic_hidden',
  'general_forum_topic_unhidden',
  'giveaway_created',
  'giveaway',
  'giveaway_winners',
  'giveaway_completed',
  'paid_message_price_changed',
  'direct_message_price_changed',
  'suggested_post_approved',
  'suggested_post_approval_failed',
  'suggested_post_declined',
  'suggested_post_paid',
  'suggested_post_refunded',
  'video_chat_scheduled',
  'video_chat_started',
  'video_chat_ended',
  'video_chat_participants_invited',
  'web_app_data',
  'chat_owner_left',
  'chat_owner_changed',
  'community_chat_added',
  'community_chat_joined',
  'community_chat_removed',
  'managed_bot_created',
  'poll_option_added',
  'poll_option_deleted',
] as const

function isServiceMessage(message: Record<string, unknown>): boolean {
  if (str(message.text) !== null || str(message.caption) !== null) return false
  return SERVICE_FIELDS.some((field) => message[field] !== undefined)
}

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
  const key: DeliveryKey = { namespace: 'telegram', scope: botId, id: String(updateId) }
  // Acknowledged and remembered (a replay is a duplicate), but no row: nobody wrote it.
  if (isServiceMessage(message)) return { action: 'record', key }

  const senderId = obj(message.from)?.id ?? obj(message.sender_chat)?.id ?? chatId
  if (!isId(senderId)) throw new InvalidPayloadError(`telegram ${field} without a sender id`)
  const business = message.business_connection_id
  if (business !== undefined && !isKeyPart(str(business))) {
    throw new InvalidPayloadError(`telegram ${field} with an invalid business_connection_id`)
  }
  if (business !== undefined && isBusinessOutgoing(message, chatId)) {
    return { action: 'ignore', reason: 'telegram_business_outgoing' }
  }
  // A business account is its own inbox: its chats, and its customers, are not the bot's.
  const tenant = business === undefined ? botId : `${botId}:biz:${business}`

  const kind = MESSAGE_FIELDS[field]
  const occurredAt = isoFromUnixSeconds(
    kind === 'edit' ? (message.edit_date ?? message.date) : message.date,
  )
  if (!occurredAt) throw new InvalidPayloadError(`telegram ${field} without a date`)

  const draft: InboundEventDraft = {
    kind,
    channel: 'telegram',
    tenant,
    deliveryKey: formatDeliveryKey(key),
    messageKey: `${tenant}:${chatId}:${messageId}`,
    sender: { externalId: String(senderId), ...displayName(message) },
    body: str(message.text) ?? str(message.caption) ?? '',
    occurredAt,
    // update_id grows with each update of one bot: the later of two same-second edits wins.
    ...(kind === 'edit' ? { editSeq: updateId } : {}),
  }
  return { action: 'forward', key, draft }
}

/**
 * Business updates carry both sides of the account's private chats: the customer's messages, and
 * the account's own (typed by its owner, or sent by a bot on its behalf: `sender_business_bot`).
 * The chat is the private chat with the customer, so its id is the customer's user id [inferred
 * from the Bot API's private-chat ids]; a message from anyone else is the business speaking.
 */
function isBusinessOutgoing(message: Record<string, unknown>, chatId: number): boolean {
  if (message.sender_business_bot !== undefined) return true
  const fromId = obj(message.from)?.id
  return obj(message.chat)?.type === 'private' && fromId !== undefined && fromId !== chatId
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
