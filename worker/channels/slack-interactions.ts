/**
 * Slack interactivity posts (`payload=` JSON of a form body). A button press or a menu choice in a
 * message (`block_actions`, the legacy `interactive_message`) is a row of its own in the
 * channel's conversation, carrying what was pressed (press.ts), under the message key
 * `{team}:{channel}:press:{user}:{action_ts}` (never a message's `{team}:{channel}:{ts}`) and the
 * delivery key `slack-interaction:{api_app_id}:{trigger_id}`. The app's own UI with no conversation
 * or content (a modal closed, a typeahead, a shortcut) is recorded; anything else, a press outside
 * a conversation or a form submitted with what the person typed, is kept as unrecognized.
 * @module
 */
import { keyPart } from '../../contract/delivery-key'
import { pressBody } from './press'
import type { Delivery, DeliveryKey } from './types'
import { formatDeliveryKey } from './types'
import { isKeyPart, isoFromUnixSeconds, list, obj, str, vendorId } from './untrusted'

type Json = Record<string, unknown>

/** Interactions that are the app's own UI and carry nothing of a conversation: recorded. */
export const SLACK_UI_INTERACTIONS: Readonly<Record<string, string>> = {
  view_closed: 'a person closed one of the app’s modals',
  block_suggestion: 'a typeahead asked the app for menu options',
  dialog_cancellation: 'a person cancelled one of the app’s dialogs',
  shortcut: 'a global shortcut opened the app',
  message_action: 'a message shortcut on a message (the message is its own event)',
  workflow_step_edit: 'a workflow step opened for editing',
}

export async function classifyInteraction(payload: Json): Promise<Delivery> {
  const type = str(payload.type) ?? 'none'
  const appId = vendorId(payload.api_app_id, 64) ?? vendorId(obj(payload.team)?.id, 64)
  const triggerId = vendorId(payload.trigger_id)
  const reason = `slack_interaction_${isKeyPart(type) ? type.slice(0, 32) : 'other'}`
  if (Object.hasOwn(SLACK_UI_INTERACTIONS, type)) {
    // Some (view_closed, block_suggestion) carry no trigger_id: nothing to remember them by.
    if (!triggerId || !appId) return { action: 'ignore', reason }
    return { action: 'record', key: await interactionKey(appId, triggerId) }
  }
  if (type !== 'block_actions' && type !== 'interactive_message') {
    return { action: 'unrecognized', reason }
  }
  const press = await pressOf(payload)
  if (!press || !appId || !triggerId)
    return { action: 'unrecognized', reason: `${reason}_unplaced` }
  const key = await interactionKey(appId, triggerId)
  return {
    action: 'forward',
    key,
    draft: {
      kind: 'message',
      channel: 'slack',
      tenant: press.team,
      deliveryKey: formatDeliveryKey(key),
      messageKey: `${press.team}:${press.channel}:press:${press.user}:${press.at}`,
      sender: { externalId: press.user },
      body: press.body,
      occurredAt: isoFromUnixSeconds(press.at) ?? new Date().toISOString(),
    },
  }
}

async function interactionKey(appId: string, triggerId: string): Promise<DeliveryKey> {
  const tag = await keyPart(appId)
  return {
    namespace: 'slack-interaction',
    scope: appId,
    ...(tag === appId ? {} : { scopeTag: tag }),
    id: await keyPart(triggerId),
  }
}

interface Press {
  team: string
  channel: string
  user: string
  /** The press's `action_ts`. */
  at: string
  body: string
}

/** A press in a conversation: who, where, when and what; null when any of it is missing. */
async function pressOf(payload: Json): Promise<Press | null> {
  const actions = list(payload.actions).map(obj)
  const team = vendorId(obj(payload.team)?.id, 64) ?? vendorId(obj(payload.user)?.team_id, 64)
  const channel = vendorId(obj(payload.channel)?.id) ?? vendorId(obj(payload.container)?.channel_id)
  const user = vendorId(obj(payload.user)?.id)
  const at = vendorId(actions[0]?.action_ts, 64) ?? vendorId(payload.action_ts, 64)
  const labels = actions.map((action) => (action ? labelOf(action) : '')).filter(Boolean)
  const body = pressBody(labels.join('\n'), actions[0]?.value)
  if (!team || !channel || !user || !at || body === '') return null
  return { team, channel, user, at: await keyPart(at), body }
}

/** What a person saw of one action: a button's text, a menu's chosen options, a picked date. */
function labelOf(action: Json): string {
  const textOf = (value: unknown) => str(obj(obj(value)?.text)?.text)
  const chosen = [obj(action.selected_option), ...list(action.selected_options).map(obj)]
    .map((option) => textOf(option) ?? str(option?.value))
    .filter((label): label is string => label !== null)
  const picked = ['selected_date', 'selected_time', 'selected_date_time', 'selected_user']
    .map((name) => action[name])
    .filter(
      (value): value is string | number => typeof value === 'string' || typeof value === 'number',
    )
    .map(String)
  const button = str(obj(action.text)?.text)
  return [button, ...chosen, ...picked].filter(Boolean).join(', ')
}
