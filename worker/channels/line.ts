/**
 * LINE Messaging API webhooks. One POST carries `{destination, events[]}`: the bot (`destination`,
 * its user id) is the tenant, and each event is its own delivery (worker/deliver-batch.ts), as
 * WhatsApp Cloud's batches are. The console's Verify button sends no events (answered 200).
 *
 * Keys (docs/keys.md's key table):
 * - delivery: `line:{destination}:{webhookEventId}` (a ULID, one per event);
 * - message: `{destination}:{message.id}`, so a redelivery under another webhookEventId, or a
 *   standby copy of the same message, is still one row; `unsend` deletes under the key of the
 *   message it names.
 * LINE does not say how long it redelivers (its redelivery is opt-in, per channel): the Redis claim
 * keeps the global TTL, and Postgres's message key holds beyond it.
 * @module
 */
import { channelTtlSetting } from '../../claims'
import { boundAttachments } from '../../contract/attachments'
import { type Bytes, equalsAny, hmac, toBase64 } from '../../contract/crypto'
import type { Attachment, EventKind } from '../../contract/event'
import { LIMITS } from '../../contract/event'
import type { StringEnv } from '../../contract/settings'
import type { ChannelConfig } from '../config'
import { InvalidPayloadError } from '../errors'
import { logLine } from '../log'
import type { TenantSecrets, TenantVerdict } from '../tenants'
import { matchingTenant, sharedSecretRow, tenantSecrets, tenantSecretsRow } from '../tenants'
import { plainReplies } from './replies'
import type { ChannelDelivery, Classified, RequestParts, WebhookChannel } from './types'
import { formatDeliveryKey } from './types'
import { isKeyPart, isoFromUnixSeconds, list, obj, parseJsonObject, str } from './untrusted'

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
  pick: (settings) => settings.line,
  verify: (parts, config) => verifyLine(parts, config.channelSecrets),
  parse: (parts) => parseJsonObject(parts.body.text, 'line body'),
  classify: (payload) => classifyLine(payload),
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
 * only inside the body, so every bot's secrets are tried (tenants.ts `matchingTenant`); the bot
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
export function classifyLine(body: Json): Classified {
  const events = list(body.events)
  if (events.length === 0) return { action: 'ignore', reason: 'line_no_events' }
  if (events.length > MAX_LINE_EVENTS) throw new InvalidPayloadError('line batch too large')
  const destination = str(body.destination)
  // Unkeyable (LINE always sends it): acknowledged and logged, never guessed at.
  if (destination === null || !USER_ID.test(destination)) {
    return { action: 'ignore', reason: 'line_without_destination' }
  }
  return events.map((event) => eventDelivery(destination, obj(event)))
}

/** LINE's message ids are decimal numbers. */
const MESSAGE_ID = /^\d{1,32}$/
const isMessageId = (id: string | null): id is string => id !== null && MESSAGE_ID.test(id)

function eventDelivery(destination: string, event: Json | null): ChannelDelivery {
  const eventId = str(event?.webhookEventId)
  if (!event || !isKeyPart(eventId)) return { action: 'ignore', reason: 'line_event_without_id' }
  const key = { namespace: 'line', scope: destination, id: eventId }
  const type = str(event.type) ?? 'none'
  const what = whatItIs(type, event)
  if ('ignore' in what) return { action: 'ignore', reason: what.ignore }
  const userId = str(obj(event.source)?.userId)
  if (userId === null || !USER_ID.test(userId)) {
    return { action: 'ignore', reason: 'line_message_without_sender' }
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
      tenant: destination,
      deliveryKey: formatDeliveryKey(key),
      messageKey: `${destination}:${what.messageId}`,
      sender: { externalId: userId },
      body: what.body.slice(0, LIMITS.body),
      occurredAt: isoFromMillis(event.timestamp) ?? new Date().toISOString(),
      ...(attachments ? { attachments } : {}),
    },
  }
}

const isoFromMillis = (value: unknown) =>
  typeof value === 'number' ? isoFromUnixSeconds(value / 1000) : null

/** What an event is: a message, the delete of one, or why it is not one we store. */
type What =
  | { kind: EventKind; messageId: string; body: string; attachments: Attachment[] }
  | { ignore: string }

function whatItIs(type: string, event: Json): What {
  const name = (prefix: string, value: string) =>
    `${prefix}_${isKeyPart(value) ? value.slice(0, 32) : 'other'}`
  if (type === 'unsend') {
    const messageId = str(obj(event.unsend)?.messageId)
    if (!isMessageId(messageId)) return { ignore: 'line_message_without_id' }
    return { kind: 'delete', messageId, body: '', attachments: [] }
  }
  // follow, join, postback, beacon, memberJoined, ...: acknowledged, not stored.
  if (type !== 'message') return { ignore: name('line_type', type) }
  const message = obj(event.message)
  const messageId = str(message?.id)
  if (!message || !isMessageId(messageId)) return { ignore: 'line_message_without_id' }
  const content = contentOf(message, messageId)
  if (!content) return { ignore: name('line_message_type', str(message.type) ?? 'none') }
  return { kind: 'message', messageId, ...content }
}

const text = (value: unknown) => (typeof value === 'string' ? value : undefined)
const MEDIA = new Set(['image', 'video', 'audio', 'file'])

/**
 * A message's text and attachments, by its type (the webhook OpenAPI's MessageContent). LINE
 * serves a media message's content by the message id (GET /v2/bot/message/{id}/content, with the
 * channel's token): that is its `mediaId`; `external` content has its own URL too.
 */
function contentOf(message: Json, id: string): { body: string; attachments: Attachment[] } | null {
  const type = str(message.type)
  if (type === 'text') return { body: text(message.text) ?? '', attachments: [] }
  if (type !== null && MEDIA.has(type)) {
    const provider = obj(message.contentProvider)
    const { fileName, fileSize, duration, imageSet } = message
    const media: Attachment = {
      kind: type as Attachment['kind'],
      mediaId: id,
      url: provider?.type === 'external' ? text(provider.originalContentUrl) : undefined,
      fileName: text(fileName),
      size: typeof fileSize === 'number' ? fileSize : undefined,
      content: { ...(obj(imageSet) ? { imageSet } : {}), ...(duration ? { duration } : {}) },
    }
    return { body: '', attachments: [media] }
  }
  if (type === 'location') {
    const { title, address, latitude, longitude } = message
    const content = { title, address, latitude, longitude }
    return { body: '', attachments: [{ kind: 'location', content }] }
  }
  if (type === 'sticker') {
    const { packageId, stickerResourceType, keywords } = message
    const sticker: Attachment = {
      kind: 'sticker',
      mediaId: text(message.stickerId),
      content: { packageId, stickerResourceType, keywords },
    }
    // A message sticker carries the text the user typed on it.
    return { body: text(message.text) ?? '', attachments: [sticker] }
  }
  return null
}
