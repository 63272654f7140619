/**
 * Telegram's fixtures: an update, sent with the bot's secret_token, and a fresh delivery.
 * @module
 */
import { TELEGRAM_SECRET_HEADER } from '../../worker/channels/telegram-verify'
import {
  FORGED_SECRET,
  randomBelow,
  type SignedDelivery,
  type Signing,
  TEST_SECRETS,
} from './common'

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
