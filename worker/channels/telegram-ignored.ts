/**
 * What Telegram documents as no message a person wrote, by the reason telegram.ts gives it:
 * answered "ok", nothing kept.
 * @module
 */

/**
 * The update fields Telegram documents that carry no message a person wrote (the Bot API's
 * Update): answered "ok", nothing kept. A `callback_query` is a button press: a row.
 */
export const NON_MESSAGE_FIELDS = [
  'inline_query',
  'chosen_inline_result',
  'shipping_query',
  'pre_checkout_query',
  'purchased_paid_media',
  'poll',
  'poll_answer',
  'my_chat_member',
  'chat_member',
  'chat_join_request',
  'message_reaction',
  'message_reaction_count',
  'chat_boost',
  'removed_chat_boost',
  'business_connection',
] as const

export const TELEGRAM_IGNORED: Readonly<Record<string, string>> = {
  telegram_business_outgoing: "the business account's own message in its chat (its echo)",
  ...Object.fromEntries(
    NON_MESSAGE_FIELDS.map((field) => [`telegram_${field}`, `the update field ${field}`]),
  ),
}
