/**
 * The body of a Telegram message: its text, or the caption of its media; a poll or a dice throw,
 * which carry neither, written out as plain text so the row says what the person sent:
 *
 *     Poll: Where do we meet?        Quiz: 2 + 2?        🎲 4
 *     - Office                       - 3
 *     - Café                         - 4
 *
 * A poll is `Quiz:` when its `type` is `quiz`, else `Poll:`; then its question and one option a
 * line (Bot API Poll: `question`, `options[].text`, `type` regular|quiz). A dice is its `emoji`
 * and `value` (Bot API Dice; the emoji defaults to 🎲 as sendDice's does). A forwarded story is
 * `Story from {its chat's title} (@{username})`.
 * @module
 */

import { LIMITS } from '../../contract/event'
import { bounded } from '../../shared/text'
import { list, obj, str } from './untrusted'

/** The row's body for a Message, within LIMITS.body ('' when it has no text of any kind). */
export function telegramBody(message: Record<string, unknown>): string {
  const text =
    str(message.text) ??
    str(message.caption) ??
    pollText(obj(message.poll)) ??
    diceText(obj(message.dice)) ??
    storyText(obj(message.story)) ??
    ''
  return bounded(text, LIMITS.body)
}

function pollText(poll: Record<string, unknown> | null): string | null {
  if (!poll) return null
  const question = str(poll.question) ?? ''
  const options = list(poll.options)
    .map((option) => str(obj(option)?.text))
    .filter((option): option is string => option !== null)
  if (question === '' && options.length === 0) return null
  const header = `${poll.type === 'quiz' ? 'Quiz' : 'Poll'}: ${question}`
  return [header, ...options.map((option) => `- ${option}`)].join('\n')
}

function diceText(dice: Record<string, unknown> | null): string | null {
  if (!dice) return null
  const emoji = str(dice.emoji) ?? '🎲'
  return Number.isSafeInteger(dice.value) ? `${emoji} ${dice.value}` : emoji
}

/** A forwarded story: whose it is (its chat's title, and @username when it has one). */
function storyText(story: Record<string, unknown> | null): string | null {
  if (!story) return null
  const chat = obj(story.chat)
  const title = str(chat?.title) ?? str(chat?.first_name)
  const username = str(chat?.username)
  const whose = [title, username ? `(@${username})` : null].filter(Boolean).join(' ')
  return whose ? `Story from ${whose}` : 'Story'
}
