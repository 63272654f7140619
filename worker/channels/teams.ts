/**
 * Microsoft Teams (Bot Framework activities). Each POST is one activity with `Authorization:
 * Bearer <JWT>`, verified in teams-verify.ts: signed (RS256) by a key of the Bot Framework's
 * JWKS (teams-keys.ts), issuer `https://api.botframework.com`, audience the bot's app id (the
 * tenant: TEAMS_APP_IDS lists the bots), not expired (5 min skew), the key endorsing the
 * activity's `channelId`, and the token's `serviceurl` claim equal to the activity's `serviceUrl`
 * (Microsoft's "Authentication" doc and botframework-connector's ChannelValidation). Anything
 * else is 403, as that doc says.
 *
 * Keys (docs/keys.md's key table): the message key is `{app id}:{channelId}:{conversation
 * tag}:{activity.id}`. The schema says an id is unique "on the channel", but Teams' message ids
 * are the times they were posted in ms, and Graph addresses a message within its chat or channel:
 * two chats' messages of one millisecond must not be one row. `messageUpdate` (editMessage,
 * undeleteMessage) and `messageDelete` (softDeleteMessage) carry the id of the message they
 * change: the same message key, their own delivery keys. A card's submit or Universal Action is a
 * button press (press.ts), a row of its own. Only message activities become rows; an activity
 * without an id is keyed by a hash of what it says (logged as a fallback key), so Postgres decides
 * on a copy. The activity types documented as no message are {@link TEAMS_IGNORED}; anything
 * else is kept as unrecognized.
 * @module
 */
import { channelTtlSetting } from '../../claims'
import { boundAttachments } from '../../contract/attachments'
import { keyPart } from '../../contract/delivery-key'
import { type InboundEventDraft, LIMITS } from '../../contract/event'
import { sha256Hex } from '../../shared/crypto'
import { readUrl, type StringEnv, setting } from '../../shared/settings'
import { UnauthorizedError } from '../errors'
import { pressBody } from './press'
import { plainReplies } from './replies'
import { teamsAttachments } from './teams-attachments'
import { botKeysFor } from './teams-keys'
import { type TeamsConfig, verifyTeams } from './teams-verify'
import {
  type ChannelConfig,
  type ChannelDelivery,
  type DeliveryKey,
  formatDeliveryKey,
  type WebhookChannel,
} from './types'

export { teamsAttachments } from './teams-attachments'

import { obj, parseJsonObject, reasonPart, str, vendorId } from './untrusted'

export const BOT_FRAMEWORK_METADATA_URL =
  'https://login.botframework.com/v1/.well-known/openidconfiguration'

const TEAMS_VARIABLES = [
  setting({
    name: 'TEAMS_APP_IDS',
    kind: 'list',
    secret: false,
    doc: "the bots' Microsoft App IDs (GUIDs): each is a tenant",
  }),
  setting({
    name: 'TEAMS_OPENID_METADATA_URL',
    kind: 'url',
    secret: false,
    default: BOT_FRAMEWORK_METADATA_URL,
    doc: "the Bot Framework's OpenID metadata (its jwks_uri has the signing keys)",
  }),
  // Teams resends after ~15 s and ~30 s: the default day covers it many times over.
  channelTtlSetting('DEDUP_TTL_SECONDS_TEAMS'),
] as const
const [APP_IDS, METADATA_URL, DEDUP_TTL] = TEAMS_VARIABLES

type Activity = Record<string, unknown>

/** Activity types the Bot Framework and Teams document as no message: answered "ok", nothing kept. */
const NON_MESSAGE_TYPES = [
  'conversationUpdate',
  'installationUpdate',
  'messageReaction',
  'typing',
  'endOfConversation',
  'event',
  'contactRelationUpdate',
  'deleteUserData',
  'trace',
  'handoff',
  'suggestion',
  'command',
  'commandResult',
] as const

/**
 * Invokes that carry nothing a person wrote to the bot: Teams asking the bot for UI (a dialog, a
 * tab, search results, a link preview) or for sign-in. The names as botbuilder-js dispatches them
 * (microsoft/botbuilder-js, libraries/botbuilder/src/teamsActivityHandler.ts). Every other invoke
 * (`task/submit`, `composeExtension/submitAction`, `message/submitAction`, `config/submit`,
 * `tab/submit`, an unknown name) carries what someone entered: kept as unrecognized.
 */
const UI_INVOKES: Readonly<Record<string, string>> = {
  'signin/verifyState': 'sign-in: the verification code of an OAuth card',
  'signin/tokenExchange': 'sign-in: a single-sign-on token exchange',
  'signin/failure': 'sign-in: its failure notice',
  healthCheck: "Teams probing the bot's health",
  'task/fetch': 'a dialog (task module) opening: the bot returns its UI',
  'tab/fetch': 'a tab opening: the bot returns its cards',
  'config/fetch': "the bot's configuration page opening",
  'composeExtension/fetchTask': 'a message-extension dialog opening',
  'composeExtension/query': 'a message-extension search: the bot returns results, nothing is sent',
  'composeExtension/selectItem': 'a search result picked into the compose box, not sent',
  'composeExtension/queryLink': 'a link unfurled in the compose box',
  'composeExtension/anonymousQueryLink': 'a link unfurled for an anonymous user',
  'composeExtension/querySettingUrl': "the message extension's settings URL asked for",
  'composeExtension/setting': "the message extension's settings page closed",
  'fileConsent/invoke': 'the answer to a file-consent card (accept or decline)',
}

/** An invoke's reason code: `teams_invoke_` and its name, `/` as `_`. */
const invokeReason = (name: string | null): string =>
  `teams_invoke_${reasonPart(name?.replaceAll('/', '_') ?? null)}`

export const TEAMS_IGNORED: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    NON_MESSAGE_TYPES.map((type) => [`teams_type_${type}`, `the ${type} activity`]),
  ),
  ...Object.fromEntries(
    Object.entries(UI_INVOKES).map(([name, what]) => [invokeReason(name), what]),
  ),
}

/**
 * Teams resends an activity it got no answer for within ~15 s: 5 s leaves the queue (and the
 * claim's release) room, so a slow origin is spooled and answered long before Teams gives up.
 * One activity per POST; Teams documents no inbound bound (its messages are at most ~100 KB), so
 * MAX_BODY_BYTES (256 KiB by default) holds the largest.
 */
export const teams: WebhookChannel<'teams', TeamsConfig, Activity, typeof TEAMS_VARIABLES> = {
  name: 'teams',
  eventChannels: ['teams'],
  variables: TEAMS_VARIABLES,
  dedupTtl: DEDUP_TTL,
  paths: ['/teams'],
  budgetMs: 5_000,
  settings: teamsConfig,
  verify: (parts, config) => verifyTeams(parts, config),
  parse: (parts) => parseJsonObject(parts.body.text, 'teams activity'),
  classify(activity, tenant) {
    // The audience is always one bot, so the verified tenant is it.
    if (tenant === null) throw new UnauthorizedError('teams: no bot')
    return classifyTeams(activity, tenant)
  },
  ignored: TEAMS_IGNORED,
  replies: plainReplies,
}

const APP_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function teamsConfig(env: StringEnv, warnings: string[]): ChannelConfig<TeamsConfig> {
  const listed = (str((env as Record<string, unknown>)[APP_IDS.name]) ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '')
  const appIds = [...new Set(listed.filter((id) => APP_ID.test(id)))]
  if (appIds.length < listed.length) {
    warnings.push(`${APP_IDS.name} has entries that are not app ids (GUIDs); skipped`)
  }
  const metadataUrl = readUrl(env, METADATA_URL, warnings) ?? BOT_FRAMEWORK_METADATA_URL
  if (appIds.length === 0) return { ok: false, missing: [APP_IDS.name] }
  return { ok: true, value: { appIds, keys: botKeysFor(metadataUrl) } }
}

/** What the activity's type and Teams' `channelData.eventType` make of the message it names. */
const CHANGES: Record<string, Record<string, 'edit' | 'undelete' | 'delete'>> = {
  // Other channels send messageUpdate without an eventType (`none`); Teams says `editMessage`.
  messageUpdate: { editMessage: 'edit', undeleteMessage: 'undelete', none: 'edit' },
  messageDelete: { softDeleteMessage: 'delete', none: 'delete' },
}

/** An Adaptive Card's Universal Action (Action.Execute): a button press, as a submit is. */
const CARD_ACTION = 'adaptiveCard/action'

export async function classifyTeams(activity: Activity, appId: string): Promise<ChannelDelivery> {
  const type = str(activity.type) ?? 'none'
  const kept = (reason: string): ChannelDelivery => ({ action: 'unrecognized', reason })
  const press = type === 'invoke' && activity.name === CARD_ACTION
  if (type === 'invoke' && !press) {
    const reason = invokeReason(str(activity.name))
    return Object.hasOwn(TEAMS_IGNORED, reason) ? { action: 'ignore', reason } : kept(reason)
  }
  const eventType = str(obj(activity.channelData)?.eventType) ?? 'none'
  const kind = press || type === 'message' ? 'message' : CHANGES[type]?.[eventType]
  if (!kind) {
    if (CHANGES[type]) return kept(`teams_${type}_${reasonPart(eventType)}`)
    const reason = `teams_type_${reasonPart(type)}`
    return Object.hasOwn(TEAMS_IGNORED, reason) ? { action: 'ignore', reason } : kept(reason)
  }
  const channelId = vendorId(activity.channelId, 64)
  if (!channelId) return kept('teams_without_channel_id')
  const from = obj(activity.from)
  const sender = vendorId(from?.id, LIMITS.key)
  if (!sender) return kept('teams_without_sender')
  const conversation = await conversationTag(activity)
  if (!conversation) return kept('teams_without_conversation')
  const body = bodyOf(kind, activity, press)
  const attachments =
    kind === 'message' || kind === 'edit' ? boundAttachments(teamsAttachments(activity)) : undefined
  // No text, no card value, no attachment of its own: nothing a row could show.
  if (kind === 'message' && body === '' && !attachments) return kept('teams_message_empty')

  const id = vendorId(activity.id, 256)
  if (id === null && kind !== 'message') return kept(`teams_${type}_without_id`)
  const messageId = `${conversation}:${id ?? `h${await contentHash(activity)}`}`
  const idPart = id === null ? `h${await contentHash(activity)}` : await keyPart(id)
  const suffix = kind === 'message' ? '' : await changeSuffix(kind, activity)
  const key: DeliveryKey = {
    namespace: 'teams',
    scope: appId,
    id: `${await keyPart(channelId)}:${conversation}:${idPart}${suffix}`,
    ...(id === null ? { fallback: true } : {}),
  }
  const name = str(from?.name)
  const draft: InboundEventDraft = {
    kind,
    channel: 'teams',
    tenant: appId,
    deliveryKey: formatDeliveryKey(key),
    messageKey: `${appId}:${channelId}:${messageId}`,
    sender: { externalId: sender, ...(name ? { displayName: name.slice(0, LIMITS.name) } : {}) },
    body,
    occurredAt: isoTime(activity.timestamp) ?? new Date().toISOString(),
    ...(attachments ? { attachments } : {}),
  }
  return { action: 'forward', key, draft }
}

/**
 * The row's text: the activity's; a card's submit (`Action.Submit`: a message with `value`, no
 * text) or Universal Action (`Action.Execute`: an invoke) is a press (press.ts), its title where
 * Teams sends it, else the card's data and inputs; a delete or an undelete sets no text.
 */
function bodyOf(kind: string, activity: Activity, press: boolean): string {
  if (kind === 'delete' || kind === 'undelete') return ''
  const text = (str(activity.text) ?? '').trim()
  if (text !== '') return text.slice(0, LIMITS.body)
  const value = obj(activity.value)
  if (press) {
    const action = obj(value?.action)
    return pressBody(action?.title, action?.data ?? action?.verb)
  }
  return kind === 'message' ? pressBody(undefined, activity.value) : ''
}

/**
 * The chat or channel: `conversation.id` without the `;messageid=` of a channel thread (a reply
 * and its edit may name the thread or not), hashed to 16 hex (ids run to 100+ characters, with
 * `:`s). Null when there is none (the Bot Framework requires one).
 */
async function conversationTag(activity: Activity): Promise<string | null> {
  const id = str(obj(activity.conversation)?.id)?.split(';')[0]
  return id ? `c${(await sha256Hex(id)).slice(0, 16)}` : null
}

/**
 * A change's own delivery: each edit of one message is another (its time and text tell them
 * apart, a resend of one edit is the same); so is each delete and undelete (a message deleted,
 * restored and deleted again: its time tells the two deletes apart).
 */
async function changeSuffix(kind: 'edit' | 'delete' | 'undelete', activity: Activity) {
  const material = [activity.timestamp, kind === 'edit' ? activity.text : ''].map((p) =>
    typeof p === 'string' ? p : '',
  )
  return `:${kind}:${(await sha256Hex(material.join('|'))).slice(0, 16)}`
}

/** Stands in for a missing id: what tells one message from another (as Slack's fallback does). */
async function contentHash(activity: Activity): Promise<string> {
  const parts = [
    str(obj(activity.conversation)?.id),
    str(obj(activity.from)?.id),
    str(activity.timestamp),
    str(activity.text),
  ]
  return (await sha256Hex(parts.map((p) => p ?? '').join('|'))).slice(0, 32)
}

function isoTime(value: unknown): string | null {
  if (typeof value !== 'string') return null
  const date = new Date(value)
  return Number.isNaN(date.getTime()) ? null : date.toISOString()
}
