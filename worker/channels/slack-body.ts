/**
 * The body of a Slack message: its own text, then each message it forwards. Slack's "Forward" and
 * "Share message" put the shared message in a legacy secondary attachment marked `is_share: true`
 * (its text in `text`, a plain summary in `fallback`, its author in `author_name`), and leave the
 * message's own `text` empty when the person added nothing, so without them the row would be
 * empty. Each share is quoted, after a line naming its author:
 *
 *     hello check that out!
 *
 *     Forwarded message from lev:
 *     > this will be shared with a message
 *
 * Attachments without `is_share` are left out: a link unfurl (`is_msg_unfurl` alone, a pasted
 * link to a Slack message; or a web page's preview) is Slack's rendering of a link the person
 * wrote, and often arrives later as a `message_changed`, which must not read as a changed text.
 * @module
 */

import { LIMITS } from '../../contract/event'
import { bounded } from '../../shared/text'
import { list, obj, str } from './untrusted'

/** The row's body for a message event (or an edit's `message`), within LIMITS.body. */
export function slackBody(message: Record<string, unknown>): string {
  const own = typeof message.text === 'string' ? message.text : ''
  const shares = list(message.attachments)
    .map(obj)
    .filter((attachment): attachment is Record<string, unknown> => attachment?.is_share === true)
    .map(quotedShare)
  const parts = own === '' ? shares : [own, ...shares]
  return bounded(parts.join('\n\n'), LIMITS.body)
}

/** A header naming the author (if Slack gives one), then the shared text, each line quoted. */
function quotedShare(share: Record<string, unknown>): string {
  const author = str(share.author_name) ?? mention(str(share.author_id))
  const header = author ? `Forwarded message from ${author}:` : 'Forwarded message:'
  // `fallback` is Slack's plain summary ("[date] author: text"): the text when there is no other.
  const content = [str(share.pretext), str(share.text) ?? str(share.fallback)].filter(
    (part): part is string => part !== null,
  )
  const quoted = content.join('\n').split('\n').map(quoteLine)
  return content.length > 0 ? [header, ...quoted].join('\n') : header
}

/** A user id as Slack writes a mention in message text (`<@U…>`), as the own text would have it. */
function mention(userId: string | null): string | null {
  return userId ? `<@${userId}>` : null
}

function quoteLine(line: string): string {
  return line === '' ? '>' : `> ${line}`
}
