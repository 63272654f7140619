/**
 * The message a Slack inner event (`message`, `app_mention`) describes, as the row it becomes:
 * a new message, an edit (`message_changed`) or a delete (`message_deleted`), each keyed
 * `{team_id}:{channel}:{ts}` (slack.ts has the channel and its keys); or why it is not one we
 * store (a bot's, Slackbot's, a system notice).
 * @module
 */
import type { InboundEventDraft } from '../../contract/event'
import { slackBody } from './slack-body'
import { slackFiles } from './slack-files'
import { isoFromUnixSeconds, obj, reasonPart, str } from './untrusted'

/** Message subtypes that are a person's message; other subtypes are system notices. */
const USER_MESSAGE_SUBTYPES = new Set(['file_share', 'thread_broadcast', 'me_message'])

type DraftWithoutDelivery = Omit<InboundEventDraft, 'deliveryKey'>

/** The message an inner event describes, or why it is not one we store. */
export function messageDraft(
  teamId: string,
  event: Record<string, unknown>,
): DraftWithoutDelivery | { ignore: string } {
  const channel = str(event.channel)
  const subtype = str(event.subtype)
  if (!channel) return { ignore: 'slack_no_channel' }
  const robot = notAPerson(event)
  if (robot) return { ignore: robot }

  if (subtype === 'message_changed') {
    const message = obj(event.message)
    const ts = str(message?.ts)
    if (!message || !ts) return { ignore: 'slack_edit_without_message' }
    const editedRobot = notAPerson(message)
    if (editedRobot) return { ignore: editedRobot }
    const user = str(message.user)
    if (!user) return { ignore: 'slack_no_sender' }
    const edited = obj(message.edited)
    return {
      kind: 'edit',
      channel: 'slack',
      tenant: teamId,
      messageKey: `${teamId}:${channel}:${ts}`,
      sender: { externalId: user },
      body: slackBody(message),
      occurredAt: isoFromUnixSeconds(edited?.ts ?? event.ts) ?? isoFromUnixSeconds(ts) ?? '',
      ...slackFiles(message),
    }
  }
  if (subtype === 'message_deleted') {
    const deletedTs = str(event.deleted_ts)
    if (!deletedTs) return { ignore: 'slack_delete_without_ts' }
    const previous = obj(event.previous_message)
    return {
      kind: 'delete',
      channel: 'slack',
      tenant: teamId,
      messageKey: `${teamId}:${channel}:${deletedTs}`,
      // A delete names no actor; the author of the deleted message is the best we have.
      sender: { externalId: str(previous?.user) ?? str(event.user) ?? 'unknown' },
      body: '',
      occurredAt: isoFromUnixSeconds(event.event_ts ?? event.ts) ?? '',
    }
  }
  if (subtype && !USER_MESSAGE_SUBTYPES.has(subtype)) {
    return { ignore: `slack_subtype_${reasonPart(subtype)}` }
  }

  const ts = str(event.ts)
  const user = str(event.user)
  if (!ts) return { ignore: 'slack_no_ts' }
  if (!user) return { ignore: 'slack_no_sender' }
  return {
    kind: 'message',
    channel: 'slack',
    tenant: teamId,
    messageKey: `${teamId}:${channel}:${ts}`,
    sender: { externalId: user },
    body: slackBody(event),
    occurredAt: isoFromUnixSeconds(ts) ?? '',
    ...slackFiles(event),
  }
}

/**
 * Why a message is no person's: bots (ours included) post with bot_id, with or without subtype
 * bot_message; Slackbot posts workspace notices ("You have been removed from #…") as the user
 * USLACKBOT with no bot_id.
 */
function notAPerson(message: Record<string, unknown>): string | null {
  if (str(message.bot_id) || str(message.subtype) === 'bot_message') return 'slack_bot_message'
  return str(message.user) === 'USLACKBOT' ? 'slack_slackbot' : null
}
