/**
 * Telegram Bot API webhooks.
 *
 * Keys (see docs/keys.md's key table):
 * - delivery: `dedup:telegram:{bot id}:{update_id}`. `update_id` is unique per bot only, and after
 *   a week of silence the next one is random: a set of seen ids with a TTL, never "below the last".
 * - message: `{bot id}:{chat.id}:{message_id}` (message ids are unique per chat only, chats are
 *   the bot's); a business message `{bot id}:biz:{business_connection_id}:{chat.id}:{message_id}`
 *   (a business chat may share its id with a bot chat). An edit has the same key, kind `edit`, time
 *   `edit_date` and `editSeq` = `update_id` (edits within one second are ordered by it).
 * - media, locations and contacts become the event's attachments (telegram-media.ts); the body is
 *   the text, or the caption; a poll or a dice throw is written out as text (telegram-body.ts).
 * - service messages (members joined, title changed, pinned, ...) are recorded, never forwarded;
 *   the business account's own messages in its chats are ignored (like a bot's echoes).
 * - a `callback_query` (an inline keyboard's button pressed) is a row of its own
 *   (telegram-callback.ts); the other update fields Telegram documents as no message are
 *   telegram-ignored.ts; anything else, or a message of no content this code knows, is kept
 *   as unrecognized.
 * @module
 */

import { channelTtlSetting } from '../../claims'
import { keyPart } from '../../contract/delivery-key'
import type { InboundEventDraft } from '../../contract/event'
import type { RawBody } from '../../shared/body'
import { secretList } from '../../shared/crypto'
import { present, rawValue, type StringEnv, setting } from '../../shared/settings'
import { UnauthorizedError } from '../errors'
import { plainReplies } from './replies'
import { telegramBody } from './telegram-body'
import { callbackDraft } from './telegram-callback'
import { NON_MESSAGE_FIELDS, TELEGRAM_IGNORED } from './telegram-ignored'
import { telegramAttachments } from './telegram-media'
import { isServiceMessage } from './telegram-service'
import { TELEGRAM_BOT_ID_PATTERN, verifyTelegramBot } from './telegram-verify'
import type { TenantSecrets } from './tenant-secrets'
import { parseTenantSecrets, sharedSecretRow, tenantSecretsRow } from './tenant-secrets'
import type { ChannelConfig, ChannelDelivery, DeliveryKey, WebhookChannel } from './types'
import { formatDeliveryKey } from './types'
import { isoFromUnixSeconds, obj, parseJsonObject, str, vendorId } from './untrusted'

export interface TelegramConfig {
  /** `secret_token`s by bot id (the path `/webhooks/telegram/{botId}`); always per bot. */
  secretTokens: TenantSecrets
  /** The bot of the bare path `/webhooks/telegram` (TELEGRAM_BOT_ID), if any. */
  pathlessBotId: string | null
}

const TELEGRAM_VARIABLES = [
  sharedSecretRow('TELEGRAM_SECRET_TOKEN', 'secret_tokens of the bot TELEGRAM_BOT_ID'),
  setting({
    name: 'TELEGRAM_BOT_ID',
    kind: 'string',
    secret: false,
    doc: 'the numeric id of the bot served on the bare path /webhooks/telegram',
  }),
  tenantSecretsRow('TELEGRAM_SECRET_TOKENS_BY_BOT', 'more bots, each its own secret_tokens'),
  channelTtlSetting('DEDUP_TTL_SECONDS_TELEGRAM'),
] as const
const [SECRET_TOKEN, BOT_ID, TOKENS_BY_BOT] = TELEGRAM_VARIABLES

/**
 * Telegram waits up to 60 s; 10 s is plenty. One bot per path (`/telegram/{botId}`, its own
 * secret_token list); the bare `/telegram` is the bot of TELEGRAM_BOT_ID (the single-tenant setup).
 */
export const telegram: WebhookChannel<
  'telegram',
  TelegramConfig,
  TelegramUpdate,
  typeof TELEGRAM_VARIABLES
> = {
  name: 'telegram',
  eventChannels: ['telegram'],
  variables: TELEGRAM_VARIABLES,
  dedupTtl: TELEGRAM_VARIABLES[3],
  paths: ['/telegram', '/telegram/:botId'],
  budgetMs: 10_000,
  settings: telegramConfig,
  verify: (parts, config, params) =>
    verifyTelegramBot(parts, config.secretTokens, params.botId ?? config.pathlessBotId),
  parse: (parts) => parseTelegram(parts.body),
  classify(update, tenant) {
    // Telegram secrets are always per bot, so the verified tenant is the bot.
    if (tenant === null) throw new UnauthorizedError('telegram: no bot')
    return classifyTelegram(update, tenant)
  },
  ignored: TELEGRAM_IGNORED,
  replies: plainReplies,
}

/** What Telegram's setWebhook accepts as `secret_token`. */
const TELEGRAM_TOKEN_PATTERN = /^[A-Za-z0-9_-]{1,256}$/

/**
 * Telegram's settings: every bot is its own tenant (the Update names no bot, so the path does).
 * The single-tenant pair TELEGRAM_SECRET_TOKEN + TELEGRAM_BOT_ID is one more bot, also served on
 * the bare path; TELEGRAM_SECRET_TOKENS_BY_BOT adds bots (its entry wins for the same bot id).
 */
function telegramConfig(env: StringEnv, warnings: string[]): ChannelConfig<TelegramConfig> {
  const byBot =
    parseTenantSecrets(
      TOKENS_BY_BOT.name,
      rawValue(env, TOKENS_BY_BOT.name),
      { test: (id) => TELEGRAM_BOT_ID_PATTERN.test(id), hint: 'a numeric bot id' },
      warnings,
      { isValid: (token) => TELEGRAM_TOKEN_PATTERN.test(token) },
    ) ?? new Map<string, string[]>()
  const tokens = secretList(rawValue(env, SECRET_TOKEN.name))
  const botId = present(env, BOT_ID.name)
  const botIdValid = botId !== null && TELEGRAM_BOT_ID_PATTERN.test(botId)
  if (botId !== null && !botIdValid) warnings.push('TELEGRAM_BOT_ID must be the numeric bot id')
  const pathlessBotId = tokens.length > 0 && botIdValid ? botId : null
  if (pathlessBotId !== null) {
    if (byBot.has(pathlessBotId)) {
      warnings.push(
        `TELEGRAM_SECRET_TOKENS_BY_BOT lists bot ${pathlessBotId} too; its entry is used`,
      )
    } else {
      byBot.set(pathlessBotId, tokens)
    }
  }
  if (byBot.size > 0) {
    return {
      ok: true,
      value: { secretTokens: { kind: 'per-tenant', byTenant: byBot }, pathlessBotId },
    }
  }
  if (present(env, TOKENS_BY_BOT.name)) {
    return { ok: false, missing: ['TELEGRAM_SECRET_TOKENS_BY_BOT'] }
  }
  return {
    ok: false,
    missing: [
      ...(tokens.length > 0 ? [] : ['TELEGRAM_SECRET_TOKEN']),
      ...(botIdValid ? [] : ['TELEGRAM_BOT_ID']),
    ],
  }
}

export type TelegramUpdate = Record<string, unknown>

export function parseTelegram(body: RawBody): TelegramUpdate {
  return parseJsonObject(body.text, 'telegram update')
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

export async function classifyTelegram(
  update: TelegramUpdate,
  botId: string,
): Promise<ChannelDelivery> {
  const kept = (reason: string): ChannelDelivery => ({ action: 'unrecognized', reason })
  const updateId = update.update_id
  if (typeof updateId !== 'number' || !Number.isSafeInteger(updateId) || updateId < 0) {
    return kept('telegram_update_without_id')
  }
  const key: DeliveryKey = { namespace: 'telegram', scope: botId, id: String(updateId) }
  const query = obj(update.callback_query)
  if (query) {
    const press = callbackDraft(query, botId)
    if (!press) return kept('telegram_callback_query_unplaced')
    return { action: 'forward', key, draft: { ...press, deliveryKey: formatDeliveryKey(key) } }
  }
  const field = (Object.keys(MESSAGE_FIELDS) as Array<keyof typeof MESSAGE_FIELDS>).find(
    (name) => update[name] !== undefined,
  )
  if (!field) {
    const other = NON_MESSAGE_FIELDS.find((name) => update[name] !== undefined)
    return other ? { action: 'ignore', reason: `telegram_${other}` } : kept('telegram_update_other')
  }

  const message = obj(update[field])
  const chat = obj(message?.chat)
  const chatId = chat?.id
  const messageId = message?.message_id
  if (!message || !isId(chatId) || !isId(messageId)) return kept(`telegram_${field}_without_ids`)
  // Acknowledged and remembered (a replay is a duplicate), but no row: nobody wrote it.
  if (isServiceMessage(message)) return { action: 'record', key }

  const senderId = obj(message.from)?.id ?? obj(message.sender_chat)?.id ?? chatId
  if (!isId(senderId)) return kept(`telegram_${field}_without_sender`)
  const business =
    message.business_connection_id === undefined ? null : vendorId(message.business_connection_id)
  if (message.business_connection_id !== undefined && business === null) {
    return kept(`telegram_${field}_business_unplaced`)
  }
  if (business !== null && isBusinessOutgoing(message, chatId)) {
    return { action: 'ignore', reason: 'telegram_business_outgoing' }
  }
  // A business account is its own inbox: its chats, and its customers, are not the bot's.
  const tenant = business === null ? botId : `${botId}:biz:${await keyPart(business)}`

  const kind = MESSAGE_FIELDS[field]
  const occurredAt = isoFromUnixSeconds(
    kind === 'edit' ? (message.edit_date ?? message.date) : message.date,
  )
  if (!occurredAt) return kept(`telegram_${field}_without_date`)

  const attachments = telegramAttachments(message)
  const body = telegramBody(message)
  // Content of a kind this code does not know (a new Bot API field): kept, never an empty row.
  if (kind === 'message' && body.trim() === '' && !attachments) {
    return kept(`telegram_${field}_empty`)
  }
  const draft: InboundEventDraft = {
    kind,
    channel: 'telegram',
    tenant,
    deliveryKey: formatDeliveryKey(key),
    messageKey: `${tenant}:${chatId}:${messageId}`,
    sender: { externalId: String(senderId), ...displayName(message) },
    body,
    occurredAt,
    // update_id grows with each update of one bot: the later of two same-second edits wins.
    ...(kind === 'edit' ? { editSeq: updateId } : {}),
    ...(attachments ? { attachments } : {}),
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
