/**
 * A Telegram `callback_query`: a person pressed a button of an inline keyboard the bot sent. A row
 * of its own (press.ts) in the chat's conversation, carrying the button's text as the keyboard
 * showed it (the button whose `callback_data` is the query's `data`), else its data. Message key
 * `{bot id}:cb:{callback_query.id}` (never a message's `{bot id}:{chat.id}:{message_id}`); the
 * query carries no time of its own, so the row's time is the keyboard message's (the same on
 * every resend of the update, so a resend is no payload mismatch), else the receive time.
 * @module
 */
import type { InboundEventDraft } from '../../contract/event'
import { pressBody } from './press'
import { isoFromUnixSeconds, list, obj, str, vendorId } from './untrusted'

type Json = Record<string, unknown>

/** The press as a draft without its delivery key; null when it names no sender or query. */
export function callbackDraft(
  query: Json,
  botId: string,
): Omit<InboundEventDraft, 'deliveryKey'> | null {
  const id = vendorId(query.id)
  const from = obj(query.from)
  const sender = from?.id
  if (id === null || typeof sender !== 'number' || !Number.isSafeInteger(sender)) return null
  const message = obj(query.message)
  const body = pressBody(buttonText(message, query.data), query.data ?? query.game_short_name)
  if (body === '') return null
  const name = [str(from?.first_name), str(from?.last_name)].filter(Boolean).join(' ')
  return {
    kind: 'message',
    channel: 'telegram',
    tenant: botId,
    messageKey: `${botId}:cb:${id}`,
    sender: { externalId: String(sender), ...(name ? { displayName: name.slice(0, 256) } : {}) },
    body,
    occurredAt: isoFromUnixSeconds(message?.date) ?? new Date().toISOString(),
  }
}

/** The text of the keyboard's button whose callback_data is `data`, if the message shows it. */
function buttonText(message: Json | null, data: unknown): string | null {
  if (typeof data !== 'string') return null
  const rows = list(obj(message?.reply_markup)?.inline_keyboard)
  for (const button of rows.flatMap((row) => list(row))) {
    if (obj(button)?.callback_data === data) return str(obj(button)?.text)
  }
  return null
}
