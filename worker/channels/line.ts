/**
 * LINE Messaging API webhooks. One POST carries `{destination, events[]}`: the bot (`destination`,
 * its user id) is the tenant, and each event is its own delivery (worker/deliver-batch.ts), as
 * WhatsApp Cloud's batches are. The console's Verify button sends no events (answered 200).
 *
 * Keys (docs/keys.md's key table):
 * - delivery: `line:{destination}:{webhookEventId}` (a ULID, one per event);
 * - message: `{destination}:{message.id}`, so a redelivery under another webhookEventId, or a
 *   standby copy of the same message, is still one row; `unsend` deletes and `messageEdited`
 *   edits under the key of the message it names; a `postback` (a button press, no message id) is
 *   a row of its own, `{destination}:postback:{webhookEventId}` (press.ts).
 * - sender: `source.userId`, else the group or room (`group:{id}`, `room:{id}`): LINE sends a
 *   userId only from its iOS and Android apps.
 * Ids are kept whatever their spelling (untrusted.ts `vendorId`), written into delivery keys by
 * contract/delivery-key.ts `keyPart`. The event types LINE documents as no message are
 * {@link LINE_IGNORED}; any other is kept as unrecognized (worker/unrecognized.ts).
 * LINE does not say how long it redelivers (its redelivery is opt-in, per channel): the Redis claim
 * keeps the global TTL, and Postgres's message key holds beyond it.
 * @module
 */
import { channelTtlSetting } from '../../claims'
import { boundAttachments } from '../../contract/attachments'
import { keyPart } from '../../contract/delivery-key'
import type { Attachment, EventKind } from '../../contract/event'
import { LIMITS } from '../../contract/event'
import { type Bytes, equalsAny, hmac, toBase64 } from '../../shared/crypto'
import type { StringEnv } from '../../shared/settings'
import { InvalidPayloadError } from '../errors'
import { logLine } from '../log'
import { lineContent } from './line-content'
import { pressBody } from './press'
import { plainReplies } from './replies'
import type { TenantSecrets } from './tenant-secrets'
import { matchingTenant, sharedSecretRow, tenantSecrets, tenantSecretsRow } from './tenant-secrets'
import {
  type ChannelConfig,
  type ChannelDelivery,
  type Classified,
  formatDeliveryKey,
  type RequestParts,
  type TenantVerdict,
  type WebhookChannel,
} from './types'
import { isoFromUnixSeconds, list, obj, parseJsonObject, str, vendorId } from './untrusted'

export interface LineConfig {
  /** Shared (LINE_CHANNEL_SECRET: any bot), or by bot user id (LINE_CHANNEL_SECRETS_BY_DESTINATION). */
  channelSecrets: TenantSecrets
}

type Json = Record<string, unknown>

const LINE_VARIABLES = [
  sharedSecretRow('LINE_CHANNEL_SECRET', 'channel secrets of a single LINE channel: any bot'),
  tenantSecretsRow('LINE_CHANNEL_SECRETS_BY_DESTINATION', 'each bot user id its channel secrets'),
  channelTtlSetting('DEDUP_TTL_SECONDS_LINE'),
] as const
const [CHANNEL_SECRET, SECRETS_BY_DESTINATION, DEDUP_TTL] = LINE_VARIABLES

export const LINE_SIGNATURE_HEADER = 'x-line-signature'

/**
 * The event types LINE documents that carry no message (the SDKs' webhook models): answered "ok",
 * nothing kept. Any other type is kept as an unrecognized event.
 */
export const LINE_IGNORED: Readonly<Record<string, string>> = {
  line_no_events: "the console's Verify, or a POST without events",
  line_type_follow: 'a user added the bot as a friend (or unblocked it)',
  line_type_unfollow: 'a user blocked the bot',
  line_type_join: 'the bot joined a group or room',
  line_type_leave: 'the bot was removed from a group or room',
  line_type_memberJoined: 'users joined a group or room the bot is in',
  line_type_memberLeft: 'users left a group or room the bot is in',
  line_type_beacon: "a user came into a LINE Beacon's range",
  line_type_accountLink: 'a user linked their LINE account to the provider’s service',
  line_type_videoPlayComplete: 'a user finished watching a video the bot sent',
  line_type_membership: "a change of a user's membership (subscription)",
  line_type_activated: 'a module channel was activated',
  line_type_deactivated: 'a module channel was deactivated',
  line_type_botSuspended: 'a module channel was suspended',
  line_type_botResumed: 'a module channel was resumed',
  line_type_delivery: 'a LINE notification message (PNP) was delivered',
  line_type_module: 'a module channel notice',
}

/**
 * LINE documents neither a response timeout nor a largest body: the budget is Meta's (the
 * shortest of the batched vendors), and a POST may carry many events, so the body bound is 1 MiB.
 */
export const line: WebhookChannel<'line', LineConfig, Json, typeof LINE_VARIABLES> = {
  name: 'line',
  eventChannels: ['line'],
  variables: LINE_VARIABLES,
  dedupTtl: DEDUP_TTL,
  paths: ['/line'],
  budgetMs: 2_500,
  maxBodyBytes: 1024 * 1024,
  settings: lineConfig,
  verify: (parts, config) => verifyLine(parts, config.channelSecrets),
  parse: (parts) => parseJsonObject(parts.body.text, 'line body'),
  classify: (payload) => classifyLine(payload),
  ignored: LINE_IGNORED,
  replies: plainReplies,
}

/** A LINE user id (a bot's `destination`, a sender's `userId`): `U` and 32 hex digits. */
const USER_ID = /^U[0-9a-f]{32}$/
const DESTINATION = { test: (id: string) => USER_ID.test(id), hint: 'a bot user id (U + 32 hex)' }

function lineConfig(env: StringEnv, warnings: string[]): ChannelConfig<LineConfig> {
  const variables = { perTenant: SECRETS_BY_DESTINATION, shared: CHANNEL_SECRET, rule: DESTINATION }
  const secrets = tenantSecrets(env, variables, warnings)
  return secrets.ok ? { ok: true, value: { channelSecrets: secrets.value } } : secrets
}

/** Base64 HMAC-SHA256(channel secret, the body's exact bytes). */
export async function lineSignature(secret: string, body: Bytes | string): Promise<string> {
  return toBase64(await hmac(secret, 'SHA-256', body))
}

/**
 * Verifies `x-line-signature` over the raw bytes, before anything is parsed. The bot is named
 * only inside the body, so every bot's secrets are tried (tenant-secrets.ts `matchingTenant`); the bot
 * whose secret matched is the tenant, and an event keyed under another bot refuses the request.
 */
export async function verifyLine(
  parts: RequestParts,
  channelSecrets: TenantSecrets,
): Promise<TenantVerdict> {
  const offered = parts.headers.get(LINE_SIGNATURE_HEADER)?.trim()
  if (!offered) return { ok: false, reason: 'missing_headers' }
  const matches = async (secrets: readonly string[]) =>
    equalsAny(await Promise.all(secrets.map((s) => lineSignature(s, parts.body.bytes))), offered)
  const bot = await matchingTenant(channelSecrets, matches)
  if (bot === undefined) return { ok: false, reason: 'signature_mismatch' }
  return { ok: true, tenant: bot }
}

/** Events of one POST the gateway takes (each costs a few subrequests); LINE states no maximum. */
export const MAX_LINE_EVENTS = 1_000

/** Every event of the POST, each its own delivery. */
export async function classifyLine(body: Json): Promise<Classified> {
  const events = list(body.events)
  if (events.length === 0) return { action: 'ignore', reason: 'line_no_events' }
  if (events.length > MAX_LINE_EVENTS) throw new InvalidPayloadError('line batch too large')
  const destination = vendorId(body.destination, 256)
  // Unkeyable (LINE always sends it): kept whole, never guessed at.
  if (destination === null) return { action: 'unrecognized', reason: 'line_without_destination' }
  const bot = { destination, tenant: await keyPart(destination) }
  return Promise.all(events.map((event) => eventDelivery(bot, obj(event))))
}

/** The bot of a POST: its `destination`, and how its keys and rows name it. */
interface Bot {
  destination: string
  /** The destination as one key part (a bot user id, `U` and 32 hex digits, as it is). */
  tenant: string
}

async function eventDelivery(bot: Bot, event: Json | null): Promise<ChannelDelivery> {
  const kept = (reason: string): ChannelDelivery => ({
    action: 'unrecognized',
    reason,
    payload: JSON.stringify({ destination: bot.destination, events: [event] }),
  })
  if (!event) return kept('line_event_not_an_object')
  const eventId = vendorId(event.webhookEventId)
  if (eventId === null) return kept('line_event_without_id')
  const type = str(event.type) ?? 'none'
  const what = whatItIs(type, event, eventId)
  if ('ignore' in what) {
    const reason = `line_type_${type.slice(0, 32)}`
    return Object.hasOwn(LINE_IGNORED, reason) ? { action: 'ignore', reason } : kept(reason)
  }
  if ('unrecognized' in what) return kept(what.unrecognized)
  const sender = senderOf(obj(event.source))
  if (sender === null) return kept('line_event_without_sender')
  const key = {
    namespace: 'line',
    scope: bot.destination,
    ...(bot.tenant === bot.destination ? {} : { scopeTag: bot.tenant }),
    id: await keyPart(eventId),
  }
  if (obj(event.deliveryContext)?.isRedelivery === true) {
    // LINE's redelivery after our earlier failure: worth seeing next to the decision line.
    logLine('info', 'line_redelivery', { deliveryKey: formatDeliveryKey(key) })
  }
  const attachments = boundAttachments(what.attachments)
  return {
    action: 'forward',
    key,
    draft: {
      kind: what.kind,
      channel: 'line',
      tenant: bot.tenant,
      deliveryKey: formatDeliveryKey(key),
      messageKey: `${bot.tenant}:${what.messageId}`,
      sender: { externalId: sender },
      body: what.body.slice(0, LIMITS.body),
      occurredAt: isoFromMillis(event.timestamp) ?? new Date().toISOString(),
      ...(attachments ? { attachments } : {}),
    },
  }
}

/**
 * Who sent it: the user (`source.userId`), else, for a group or room message from a client that
 * sends no userId (LINE includes it only for LINE for iOS and Android), the group or room itself,
 * `group:{groupId}` / `room:{roomId}`: the sender unknown, the row in that group's conversation.
 */
function senderOf(source: Json | null): string | null {
  const user = vendorId(source?.userId)
  if (user !== null) return user
  const group = vendorId(source?.groupId)
  if (source?.type === 'group' && group !== null) return `group:${group}`
  const room = vendorId(source?.roomId)
  if (source?.type === 'room' && room !== null) return `room:${room}`
  return null
}

const isoFromMillis = (value: unknown) =>
  typeof value === 'number' ? isoFromUnixSeconds(value / 1000) : null

/**
 * What an event is: a message, an edit or the delete of one, a button press; an event LINE
 * documents as no message (`ignore`: checked against {@link LINE_IGNORED}); or content this code
 * cannot place.
 */
type What =
  | { kind: EventKind; messageId: string; body: string; attachments: Attachment[] }
  | { ignore: true }
  | { unrecognized: string }

function whatItIs(type: string, event: Json, eventId: string): What {
  if (type === 'unsend') {
    const messageId = vendorId(obj(event.unsend)?.messageId)
    if (messageId === null) return { unrecognized: 'line_unsend_without_id' }
    return { kind: 'delete', messageId, body: '', attachments: [] }
  }
  if (type === 'postback') {
    const postback = obj(event.postback)
    const picked = Object.values(obj(postback?.params) ?? {}).filter(
      (value): value is string => typeof value === 'string',
    )
    const body = pressBody(undefined, postback?.data, picked)
    if (body === '') return { unrecognized: 'line_postback_empty' }
    // A postback has no message id: the event is the press.
    return { kind: 'message', messageId: `postback:${eventId}`, body, attachments: [] }
  }
  if (type !== 'message' && type !== 'messageEdited') return { ignore: true }
  const message = obj(event.message)
  const messageId = vendorId(message?.id)
  if (!message || messageId === null) return { unrecognized: `line_${type}_without_id` }
  const content = lineContent(message, messageId)
  if (!content)
    return { unrecognized: `line_message_type_${str(message.type)?.slice(0, 32) ?? 'none'}` }
  // "The event with the largest timestamp represents the latest edit state": an edit of the
  // message it names, ordered by its time like every channel's edits.
  return { kind: type === 'messageEdited' ? 'edit' : 'message', messageId, ...content }
}
