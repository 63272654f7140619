/**
 * Microsoft Teams (Bot Framework activities). Each POST is one activity with `Authorization:
 * Bearer <JWT>`, signed (RS256) by a key of the Bot Framework's JWKS (teams-keys.ts): issuer
 * `https://api.botframework.com`, audience the bot's app id (the tenant: TEAMS_APP_IDS lists the
 * bots), not expired (5 min skew), the key endorsing the activity's `channelId`, and the token's
 * `serviceurl` claim equal to the activity's `serviceUrl` (Microsoft's "Authentication" doc and
 * botframework-connector's ChannelValidation). Anything else is 403, as that doc says.
 *
 * Keys (docs/keys.md's key table): the message key is `{app id}:{channelId}:{conversation
 * tag}:{activity.id}`. The schema says an id is unique "on the channel", but Teams' message ids
 * are the times they were posted in ms, and Graph addresses a message within its chat or channel:
 * two chats' messages of one millisecond must not be one row. `messageUpdate` (editMessage) and `messageDelete`
 * (softDeleteMessage) carry the id of the message they change: the same message key, their own
 * delivery keys. Only message activities become rows; an activity without an id is keyed by a hash
 * of what it says (logged as a fallback key), so Postgres decides on a copy.
 * @module
 */
import { decodeProtectedHeader, jwtVerify } from 'jose'
import { channelTtlSetting } from '../../claims'
import { boundAttachments, kindOfMimeType } from '../../contract/attachments'
import { sha256Hex } from '../../contract/crypto'
import { type Attachment, type InboundEventDraft, LIMITS } from '../../contract/event'
import { readUrl, type StringEnv, setting } from '../../contract/settings'
import type { ChannelConfig } from '../config'
import { ForbiddenError, UnauthorizedError } from '../errors'
import type { TenantVerdict } from '../tenants'
import { plainReplies } from './replies'
import { type BotKeyCache, botKeysFor } from './teams-keys'
import type { ChannelDelivery, DeliveryKey, RequestParts, WebhookChannel } from './types'
import { formatDeliveryKey } from './types'
import { isKeyPart, list, obj, parseJsonObject, str } from './untrusted'

export interface TeamsConfig {
  /** The bots' Microsoft App IDs: each one a tenant, the audience its tokens must name. */
  appIds: readonly string[]
  /** Where the signing keys are found (Microsoft's, or a local one in tests). */
  keys: BotKeyCache
}

export const BOT_FRAMEWORK_METADATA_URL =
  'https://login.botframework.com/v1/.well-known/openidconfiguration'
export const BOT_FRAMEWORK_ISSUER = 'https://api.botframework.com'
/** The skew the doc and the SDK allow. */
export const TEAMS_CLOCK_SKEW_SECONDS = 5 * 60

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
  pick: (settings) => settings.teams,
  verify: (parts, config) => verifyTeams(parts, config),
  parse: (parts) => parseJsonObject(parts.body.text, 'teams activity'),
  classify(activity, tenant) {
    // The audience is always one bot, so the verified tenant is it.
    if (tenant === null) throw new UnauthorizedError('teams: no bot')
    return classifyTeams(activity, tenant)
  },
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

/** Every refusal is a 403 (the doc's answer); the reason goes to the log only. */
function refuse(reason: string): never {
  throw new ForbiddenError(`teams: ${reason}`)
}

/**
 * The token, then the activity it was sent with: the token does not sign the body, so the body's
 * `channelId` and `serviceUrl` must be what the token's key and claim vouch for.
 */
export async function verifyTeams(
  parts: RequestParts,
  config: TeamsConfig,
): Promise<TenantVerdict> {
  const token = /^Bearer ([A-Za-z0-9._-]{1,8192})$/.exec(
    parts.headers.get('authorization') ?? '',
  )?.[1]
  if (!token) refuse('missing_token')
  let kid: string | undefined
  try {
    const header = decodeProtectedHeader(token)
    kid = header.alg === 'RS256' && typeof header.kid === 'string' ? header.kid : undefined
  } catch {
    refuse('malformed_token')
  }
  if (!kid) refuse('unsupported_token_header')
  const key = await config.keys.key(kid)
  if (!key) refuse('unknown_key')
  const claims = await jwtVerify(token, key.key, {
    issuer: BOT_FRAMEWORK_ISSUER,
    audience: [...config.appIds],
    algorithms: ['RS256'],
    clockTolerance: TEAMS_CLOCK_SKEW_SECONDS,
    requiredClaims: ['exp'],
  }).then(
    (verified) => verified.payload,
    (err: unknown) => refuse(`token_${(err as { code?: string }).code ?? 'invalid'}`),
  )
  const activity = parseJsonObject(parts.body.text, 'teams activity')
  const channelId = str(activity.channelId)
  if (!channelId || !key.endorsements.has(channelId)) refuse('channel_not_endorsed')
  if (str(claims.serviceurl) !== str(activity.serviceUrl)) refuse('service_url_mismatch')
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud]
  const bot = config.appIds.find((id) => audiences.includes(id))
  if (!bot) refuse('audience_mismatch')
  return { ok: true, tenant: bot }
}

/** What the activity's type and Teams' `channelData.eventType` make of the message it names. */
const CHANGES: Record<string, { kind: 'edit' | 'delete'; events: readonly (string | null)[] }> = {
  // Other channels send messageUpdate without an eventType; Teams says `editMessage`.
  messageUpdate: { kind: 'edit', events: ['editMessage', null] },
  messageDelete: { kind: 'delete', events: ['softDeleteMessage', null] },
}

/** An activity id goes into Redis keys: printable, no spaces, bounded (Direct Line's hold `|`). */
const ACTIVITY_ID = /^[\x21-\x7e]{1,256}$/

export async function classifyTeams(activity: Activity, appId: string): Promise<ChannelDelivery> {
  const type = str(activity.type) ?? 'none'
  const channelId = str(activity.channelId)
  if (!isKeyPart(channelId)) return { action: 'ignore', reason: 'teams_without_channel_id' }
  const change = CHANGES[type]
  if (type !== 'message' && !change) {
    return {
      action: 'ignore',
      reason: `teams_type_${isKeyPart(type) ? type.slice(0, 32) : 'other'}`,
    }
  }
  const eventType = str(obj(activity.channelData)?.eventType)
  if (change && !change.events.includes(eventType)) {
    return { action: 'ignore', reason: `teams_${type}_${eventType?.slice(0, 32) ?? 'other'}` }
  }
  const from = obj(activity.from)
  const sender = str(from?.id)
  if (!sender) return { action: 'ignore', reason: 'teams_without_sender' }
  const conversation = await conversationTag(activity)
  if (!conversation) return { action: 'ignore', reason: 'teams_without_conversation' }

  const activityId = str(activity.id)
  const id = activityId !== null && ACTIVITY_ID.test(activityId) ? activityId : null
  if (id === null && change) return { action: 'ignore', reason: `teams_${type}_without_id` }
  const messageId = `${conversation}:${id ?? `h${await contentHash(activity)}`}`
  const kind = change?.kind ?? 'message'
  const key: DeliveryKey = {
    namespace: 'teams',
    scope: appId,
    id: `${channelId}:${messageId}${kind === 'message' ? '' : await changeSuffix(kind, activity)}`,
    ...(id === null ? { fallback: true } : {}),
  }
  const name = str(from?.name)
  const attachments = kind === 'delete' ? undefined : boundAttachments(teamsAttachments(activity))
  const draft: InboundEventDraft = {
    kind,
    channel: 'teams',
    tenant: appId,
    deliveryKey: formatDeliveryKey(key),
    messageKey: `${appId}:${channelId}:${messageId}`,
    sender: {
      externalId: sender.slice(0, LIMITS.key),
      ...(name ? { displayName: name.slice(0, LIMITS.name) } : {}),
    },
    body: kind === 'delete' ? '' : (str(activity.text) ?? '').slice(0, LIMITS.body),
    occurredAt: isoTime(activity.timestamp) ?? new Date().toISOString(),
    ...(attachments ? { attachments } : {}),
  }
  return { action: 'forward', key, draft }
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
 * An edit's own delivery: each edit of one message is another (its time and text tell them apart,
 * a resend of one edit is the same); a delete happens once.
 */
async function changeSuffix(kind: 'edit' | 'delete', activity: Activity): Promise<string> {
  if (kind === 'delete') return ':delete'
  const material = [activity.timestamp, activity.text].map((p) => (typeof p === 'string' ? p : ''))
  return `:edit:${(await sha256Hex(material.join('|'))).slice(0, 16)}`
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

/** Teams' rendering of the text itself, not an attachment. */
const HTML_TEXT = 'text/html'
const FILE_DOWNLOAD = 'application/vnd.microsoft.teams.file.download.info'

/** `activity.attachments[]`: files, inline images, cards (docs/keys.md's attachments table). */
export function teamsAttachments(activity: Activity): Attachment[] {
  return list(activity.attachments).flatMap((entry): Attachment[] => {
    const attachment = obj(entry)
    const contentType = str(attachment?.contentType)
    if (!attachment || !contentType || contentType === HTML_TEXT) return []
    const content = obj(attachment.content)
    const fileName = str(attachment.name) ?? undefined
    if (contentType === FILE_DOWNLOAD) {
      const fileType = str(content?.fileType)
      return [
        {
          kind: 'file',
          ...optional('mediaId', str(content?.uniqueId)),
          ...optional('url', str(content?.downloadUrl)),
          ...optional('fileName', fileName ?? null),
          ...(fileType ? { content: { fileType } } : {}),
        },
      ]
    }
    return [
      {
        kind: kindOfMimeType(contentType),
        mimeType: contentType,
        ...optional('url', str(attachment.contentUrl)),
        ...optional('fileName', fileName ?? null),
        // A card (adaptive, hero, ...) is its JSON; boundAttachments drops one over 16 KiB.
        ...(content ? { content } : {}),
      },
    ]
  })
}

function optional<K extends string>(name: K, value: string | null): Partial<Record<K, string>> {
  return value === null ? {} : ({ [name]: value } as Partial<Record<K, string>>)
}
