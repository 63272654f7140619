/**
 * The Messenger Platform's webhook events, which Messenger (`object: page`) and Instagram
 * messaging (`object: instagram`) share: `entry[]` (a Page or an Instagram account each), each with
 * `messaging[]` (one event) or, under the handover protocol, `standby[]` (the same events seen by
 * an app that does not hold the thread). One POST batches up to 1,000 of them; each is its own
 * delivery (worker/deliver-batch.ts), as WhatsApp Cloud's are. Each channel file (messenger.ts,
 * instagram.ts) is one {@link metaMessagingChannel}: its name (also its event channel, its path
 * and its key namespace), its `object` and its variables' names.
 *
 * Keys (docs/keys.md's key table), `{account}` the Page or Instagram account id (`entry[].id`, the
 * tenant): a message `{ns}:{account}:{mid}`, stored under `{account}:{mid}`, so its `standby` copy
 * and Meta's retries are one row; an edit `{ns}-edit:{account}:{mid}:{num_edit}` and a delete
 * (Instagram's `is_deleted`) `{ns}-delete:{account}:{mid}`, both under the message's key; reads,
 * deliveries and reactions recorded under `{ns}-status:…`, never rows. The Page's own messages
 * (`is_echo`) are no inbound message.
 * @module
 */
import { channelTtlSetting } from '../../claims'
import { boundAttachments } from '../../contract/attachments'
import type { Attachment, InboundEventDraft } from '../../contract/event'
import { LIMITS } from '../../contract/event'
import type { ChannelConfig } from '../config'
import { InvalidPayloadError } from '../errors'
import { sharedSecretRow, tenantSecretsRow } from '../tenants'
import {
  isMetaId,
  META_MAX_BODY_BYTES,
  type MetaAppConfig,
  metaAppConfig,
  verifyHandshake,
  verifyMetaSignature,
} from './meta-webhook'
import { plainReplies } from './replies'
import type { ChannelDelivery, Classified, DeliveryKey, WebhookChannel } from './types'
import { formatDeliveryKey } from './types'
import { isKeyPart, isoFromUnixSeconds, list, obj, parseJsonObject, str } from './untrusted'

type Json = Record<string, unknown>

/** What tells the channels sharing this parser apart. */
export interface MetaMessagingChannel {
  /** The body's `object`: `page` (Messenger), `instagram`. */
  object: string
  /** The event channel of its rows. */
  channel: string
  /** Its Redis key namespace, and the prefix of its `ignore` reasons. */
  namespace: string
}

/** Meta batches at most 1,000 updates in one POST. */
export const MAX_MESSAGING_ITEMS = 1_000

/** Every messaging event (and standby copy) of every entry, each its own delivery. */
export function classifyMetaMessaging(body: Json, channel: MetaMessagingChannel): Classified {
  const ns = channel.namespace
  if (body.object !== channel.object) return { action: 'ignore', reason: `${ns}_other_object` }
  const items = list(body.entry).flatMap((entry) => entryDeliveries(obj(entry), channel))
  const keyed = items.filter((item) => item.action !== 'ignore').length
  if (keyed > MAX_MESSAGING_ITEMS) throw new InvalidPayloadError(`${ns} batch too large`)
  return items.length > 0 ? items : { action: 'ignore', reason: `${ns}_no_events` }
}

function entryDeliveries(entry: Json | null, channel: MetaMessagingChannel): ChannelDelivery[] {
  const account = str(entry?.id)
  // Unkeyable (Meta documents it always present): acknowledged and logged, never guessed at.
  if (!entry || account === null || !isMetaId(account)) {
    return [{ action: 'ignore', reason: `${channel.namespace}_entry_without_id` }]
  }
  const events = [...list(entry.messaging), ...list(entry.standby)]
  return events.map((event) => eventDelivery(new Scope(channel, account), obj(event)))
}

/** One entry's account, and the keys and drafts of its channel. */
class Scope {
  constructor(
    readonly channel: MetaMessagingChannel,
    readonly account: string,
  ) {}

  key(kind: '' | '-edit' | '-delete' | '-status', id: string): DeliveryKey {
    return { namespace: `${this.channel.namespace}${kind}`, scope: this.account, id }
  }

  ignore(why: string): ChannelDelivery {
    return { action: 'ignore', reason: `${this.channel.namespace}_${why}` }
  }

  forward(
    key: DeliveryKey,
    mid: string,
    fields: Pick<InboundEventDraft, 'kind' | 'body' | 'occurredAt' | 'attachments' | 'editSeq'>,
    sender: string,
  ): ChannelDelivery {
    const draft: InboundEventDraft = {
      ...fields,
      channel: this.channel.channel,
      tenant: this.account,
      deliveryKey: formatDeliveryKey(key),
      messageKey: `${this.account}:${mid}`,
      sender: { externalId: sender },
    }
    return { action: 'forward', key, draft }
  }
}

/** A message id goes into Redis keys: base64-like (`m_AG5H…`, Instagram's `aWdf…`), no `:`. */
const MID = /^[A-Za-z0-9._+/=-]{1,400}$/
const isMid = (id: string | null): id is string => id !== null && MID.test(id)

function eventDelivery(scope: Scope, event: Json | null): ChannelDelivery {
  if (!event) return scope.ignore('event_not_an_object')
  const sender = str(obj(event.sender)?.id)
  if (sender === null || !isMetaId(sender)) return scope.ignore('event_without_sender')
  const occurredAt = isoFromMillis(event.timestamp) ?? new Date().toISOString()
  const message = obj(event.message)
  if (message) return messageDelivery(scope, message, sender, occurredAt)
  const edit = obj(event.message_edit)
  if (edit) return editDelivery(scope, edit, sender, occurredAt)
  for (const kind of ['read', 'delivery', 'reaction'] as const) {
    const status = obj(event[kind])
    if (status) return statusDelivery(scope, kind, status, sender)
  }
  // postback, optin, referral, the handover's pass_thread_control, ...: acknowledged, not stored.
  return scope.ignore('event_other')
}

const isoFromMillis = (value: unknown) =>
  typeof value === 'number' ? isoFromUnixSeconds(value / 1000) : null

function messageDelivery(
  scope: Scope,
  message: Json,
  sender: string,
  occurredAt: string,
): ChannelDelivery {
  const mid = str(message.mid)
  if (!isMid(mid)) return scope.ignore('message_without_id')
  // What the Page itself sent (its app's replies, an agent in the inbox): no inbound message.
  if (message.is_echo === true) return scope.ignore('echo')
  if (message.is_deleted === true) {
    const kind = 'delete' as const
    return scope.forward(scope.key('-delete', mid), mid, { kind, body: '', occurredAt }, sender)
  }
  const text = typeof message.text === 'string' ? message.text : ''
  const attachments = boundAttachments(list(message.attachments).flatMap(attachmentOf))
  if (text === '' && !attachments) return scope.ignore('message_empty')
  const body = text.slice(0, LIMITS.body)
  const fields = {
    kind: 'message' as const,
    body,
    occurredAt,
    ...(attachments ? { attachments } : {}),
  }
  return scope.forward(scope.key('', mid), mid, fields, sender)
}

/** `message_edit`: the new text of `mid`, its `num_edit`th edit (the larger one wins). */
function editDelivery(
  scope: Scope,
  edit: Json,
  sender: string,
  occurredAt: string,
): ChannelDelivery {
  const mid = str(edit.mid)
  if (!isMid(mid)) return scope.ignore('edit_without_id')
  const count = edit.num_edit
  const seq = typeof count === 'number' && Number.isSafeInteger(count) && count >= 0 ? count : null
  const id = `${mid}:${seq ?? Date.parse(occurredAt)}`
  const text = typeof edit.text === 'string' ? edit.text : ''
  const fields = {
    kind: 'edit' as const,
    body: text.slice(0, LIMITS.body),
    occurredAt,
    ...(seq === null ? {} : { editSeq: seq }),
  }
  return scope.forward(scope.key('-edit', id), mid, fields, sender)
}

/**
 * Reads (a `watermark`, or Instagram's seen `mid`), deliveries (a `watermark`) and reactions (to a
 * `mid`): recorded, as WhatsApp Cloud's statuses are, so a replay is a duplicate; never a row.
 */
function statusDelivery(
  scope: Scope,
  kind: 'read' | 'delivery' | 'reaction',
  status: Json,
  sender: string,
): ChannelDelivery {
  const part = (value: unknown) =>
    typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : str(value)
  const what =
    kind === 'reaction'
      ? [status.mid, status.action, status.reaction ?? 'none'].map(part)
      : [part(status.watermark) ?? part(status.mid)]
  if (!what.every((p): p is string => p !== null && (isKeyPart(p) || isMid(p)))) {
    return scope.ignore(`${kind}_without_id`)
  }
  const key = scope.key('-status', [kind, sender, ...what].join(':'))
  return { action: 'record', key, material: JSON.stringify(status) }
}

const MEDIA: Record<string, Attachment['kind']> = {
  image: 'image',
  video: 'video',
  audio: 'audio',
  file: 'file',
}

/**
 * A message attachment (`{type, payload}`): media by its URL (Meta's CDN, expiring), a sticker by
 * its `sticker_id`, a location by its coordinates. Shares, reels, story mentions, templates and
 * fallbacks carry no media of the user's: left out.
 */
function attachmentOf(value: unknown): Attachment[] {
  const attachment = obj(value)
  const type = str(attachment?.type) ?? ''
  const payload = obj(attachment?.payload)
  const url = typeof payload?.url === 'string' ? payload.url : undefined
  const sticker = payload?.sticker_id
  if (typeof sticker === 'number' || typeof sticker === 'string') {
    return [{ kind: 'sticker', mediaId: String(sticker), url }]
  }
  const kind = MEDIA[type]
  if (kind) return [{ kind, url }]
  const coordinates = obj(payload?.coordinates)
  if (type === 'location' && coordinates) {
    const { lat, long } = coordinates
    return [
      { kind: 'location', content: { latitude: lat, longitude: long, title: payload?.title } },
    ]
  }
  return []
}

/**
 * A Messenger Platform channel's rows (`{PREFIX}_…`): the app secrets of a single app, each app's
 * own, the verify token, the account ids (Pages, Instagram accounts) each app writes for, and
 * its dedup TTL.
 */
function metaMessagingVariables<const P extends string, const I extends string>(
  prefix: P,
  ids: { name: I; noun: string },
) {
  return [
    sharedSecretRow(`${prefix}_APP_SECRET`, 'app secrets of a single app: any account'),
    tenantSecretsRow(`${prefix}_APP_SECRETS_BY_APP`, 'each app id its own app secrets'),
    sharedSecretRow(`${prefix}_VERIFY_TOKEN`, "the Dashboard's verify token(s) for the handshake"),
    tenantSecretsRow(ids.name, `the ${ids.noun}s each app writes for`),
    // Meta retries a failed delivery for 36 hours, then drops it: half a day more covers it.
    channelTtlSetting(`DEDUP_TTL_SECONDS_${prefix}`, 48 * 3_600),
  ] as const
}

/**
 * The webhook channel of one `object`: Meta's handshake and signature (meta-webhook.ts), this
 * module's events, its variables named by `prefix`.
 */
export function metaMessagingChannel<
  const Name extends string,
  const P extends string,
  const I extends string,
>(spec: {
  name: Name
  object: string
  /** Its variables' prefix (`MESSENGER`). */
  prefix: P
  /** The variable of the account ids each app writes for, and what they are ('Page id'). */
  ids: { name: I; noun: string }
}) {
  const variables = metaMessagingVariables(spec.prefix, spec.ids)
  const [appSecret, appSecretsByApp, verifyToken, idsByApp, dedupTtl] = variables
  const rows = { appSecret, appSecretsByApp, verifyToken, idsByApp, idNoun: spec.ids.noun }
  const channel = { object: spec.object, channel: spec.name, namespace: spec.name }
  const webhook: WebhookChannel<Name, MetaAppConfig, Json, typeof variables> = {
    name: spec.name,
    eventChannels: [spec.name],
    variables,
    dedupTtl,
    paths: [`/${spec.name}`],
    // Messenger wants a 200 within seconds (third parties: 5 s): Meta's budget, as WhatsApp's.
    budgetMs: 2_500,
    maxBodyBytes: META_MAX_BODY_BYTES,
    settings: (env, warnings) => metaAppConfig(env, rows, warnings),
    // Its settings are under its name (worker/config.ts); Settings is typed from the registry,
    // which this channel is part of, so the name cannot index it here.
    pick: (settings) =>
      (settings as unknown as Record<Name, ChannelConfig<MetaAppConfig>>)[spec.name],
    handshake: (query, config) => verifyHandshake(query, config.verifyTokens),
    verify: (parts, config) => verifyMetaSignature(parts, config.appSecrets, config.idsByApp),
    parse: (parts) => parseJsonObject(parts.body.text, `${spec.name} body`),
    classify: (payload) => classifyMetaMessaging(payload, channel),
    replies: plainReplies,
  }
  return webhook
}
