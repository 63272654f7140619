/**
 * One Messenger Platform event (`entry[].messaging[]` / `standby[]`), Messenger's and Instagram's
 * alike: a message, its edit or unsend, a button press (a postback), a read, delivery or reaction
 * (recorded, never rows), an event Meta documents as no message (`ignore`, checked against the
 * channel's list in meta-messaging.ts), or content this code cannot place (kept as unrecognized).
 *
 * Ids are kept whatever their spelling (Meta prints `mid.<ms>:<hex>`, `m_<ms>:<hex>`, `mid.$cAA…`
 * and base64 forms): untrusted.ts `vendorId`, then contract/delivery-key.ts `keyPart` in delivery
 * keys, as they are in message keys. What the Page or account itself does (its echoes, its edits,
 * anything whose sender is the account) is no customer's message.
 * @module
 */
import { boundAttachments } from '../../contract/attachments'
import { keyPart } from '../../contract/delivery-key'
import type { Attachment, InboundEventDraft } from '../../contract/event'
import { LIMITS } from '../../contract/event'
import { pressBody } from './press'
import type { ChannelDelivery, DeliveryKey } from './types'
import { formatDeliveryKey } from './types'
import { isKeyPart, isoFromUnixSeconds, list, obj, str, vendorId } from './untrusted'

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

/** The events Meta documents as no message, by the field that names them. */
export const META_NON_MESSAGE_FIELDS = [
  'optin',
  'referral',
  'account_linking',
  'pass_thread_control',
  'take_thread_control',
  'request_thread_control',
  'app_roles',
  'policy_enforcement',
  'game_play',
] as const

/** One entry's account, and the keys, drafts and kept items of its channel. */
export class Scope {
  constructor(
    readonly channel: MetaMessagingChannel,
    /** `entry[].id` as Meta sends it: the verified scope. */
    readonly account: string,
    /** The account as a key part and a row's tenant (a numeric id as it is). */
    readonly tenant: string,
  ) {}

  key(kind: '' | '-edit' | '-delete' | '-status', id: string): DeliveryKey {
    const tag = this.tenant === this.account ? {} : { scopeTag: this.tenant }
    return { namespace: `${this.channel.namespace}${kind}`, scope: this.account, ...tag, id }
  }

  ignore(why: string): ChannelDelivery {
    return { action: 'ignore', reason: `${this.channel.namespace}_${why}` }
  }

  /** Kept whole as unrecognized: the event in an envelope of its own, to classify again. */
  kept(why: string, event: unknown): ChannelDelivery {
    const payload = {
      object: this.channel.object,
      entry: [{ id: this.account, messaging: [event] }],
    }
    const reason = `${this.channel.namespace}_${why}`
    return { action: 'unrecognized', reason, payload: JSON.stringify(payload) }
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
      tenant: this.tenant,
      deliveryKey: formatDeliveryKey(key),
      messageKey: `${this.tenant}:${mid}`,
      sender: { externalId: sender },
    }
    return { action: 'forward', key, draft }
  }
}

export async function eventDelivery(scope: Scope, event: Json | null): Promise<ChannelDelivery> {
  if (!event) return scope.kept('event_not_an_object', event)
  // A chat plugin's sender has a `user_ref` instead of a page-scoped id.
  const from = obj(event.sender)
  const sender = vendorId(from?.id) ?? vendorId(from?.user_ref)
  if (sender === null) return scope.kept('event_without_sender', event)
  const own = sender === scope.account
  const occurredAt = isoFromMillis(event.timestamp) ?? new Date().toISOString()
  const message = obj(event.message)
  if (message) return messageDelivery(scope, event, message, { sender, own, occurredAt })
  const edit = obj(event.message_edit)
  if (edit) return editDelivery(scope, event, edit, { sender, own, occurredAt })
  const postback = obj(event.postback)
  if (postback) return pressDelivery(scope, event, postback, { sender, own, occurredAt })
  for (const kind of ['read', 'delivery', 'reaction'] as const) {
    const status = obj(event[kind])
    if (status) return statusDelivery(scope, event, kind, status, sender)
  }
  const field = META_NON_MESSAGE_FIELDS.find((name) => event[name] !== undefined)
  return field ? scope.ignore(field) : scope.kept('event_other', event)
}

interface Who {
  sender: string
  /** The account itself sent it (the Page's own message, edit or press). */
  own: boolean
  occurredAt: string
}

const isoFromMillis = (value: unknown) =>
  typeof value === 'number' ? isoFromUnixSeconds(value / 1000) : null

async function messageDelivery(
  scope: Scope,
  event: Json,
  message: Json,
  { sender, own, occurredAt }: Who,
): Promise<ChannelDelivery> {
  // What the Page itself sent (its app's replies, an agent in the inbox): no inbound message.
  if (message.is_echo === true || own) return scope.ignore('echo')
  const mid = vendorId(message.mid)
  if (mid === null) return scope.kept('message_without_id', event)
  const midPart = await keyPart(mid)
  if (message.is_deleted === true) {
    const kind = 'delete' as const
    return scope.forward(scope.key('-delete', midPart), mid, { kind, body: '', occurredAt }, sender)
  }
  const text = typeof message.text === 'string' ? message.text : ''
  const attachments = boundAttachments(list(message.attachments).flatMap(attachmentOf))
  if (text === '' && !attachments) {
    // Media its API does not carry (is_unsupported) is still a customer's message: kept whole.
    if (message.is_unsupported === true) return scope.kept('message_unsupported', event)
    return scope.kept('message_empty', event)
  }
  const fields = {
    kind: 'message' as const,
    body: text.slice(0, LIMITS.body),
    occurredAt,
    ...(attachments ? { attachments } : {}),
  }
  return scope.forward(scope.key('', midPart), mid, fields, sender)
}

/** `message_edit`: the new text of `mid`, its `num_edit`th edit (the larger one wins). */
async function editDelivery(
  scope: Scope,
  event: Json,
  edit: Json,
  { sender, own, occurredAt }: Who,
): Promise<ChannelDelivery> {
  // The Page editing its own message: never a row with the Page as the customer.
  if (edit.is_echo === true || own) return scope.ignore('echo_edit')
  const mid = vendorId(edit.mid)
  if (mid === null) return scope.kept('edit_without_id', event)
  const count = edit.num_edit
  const seq = typeof count === 'number' && Number.isSafeInteger(count) && count >= 0 ? count : null
  const id = `${await keyPart(mid)}:${seq ?? Date.parse(occurredAt)}`
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
 * A postback (a postback button, Get Started, a persistent menu item, an icebreaker): a row of its
 * own carrying the button's title (press.ts). Keyed by its `mid` (Graph API v11+); an older one
 * without it by its sender and time, the only things that tell two presses apart.
 */
async function pressDelivery(
  scope: Scope,
  event: Json,
  postback: Json,
  { sender, own, occurredAt }: Who,
): Promise<ChannelDelivery> {
  if (own) return scope.ignore('echo')
  const body = pressBody(postback.title, postback.payload)
  if (body === '') return scope.kept('postback_empty', event)
  const mid =
    vendorId(postback.mid) ?? `postback:${await keyPart(sender)}:${Date.parse(occurredAt)}`
  const key = scope.key('', await keyPart(mid))
  return scope.forward(key, mid, { kind: 'message', body, occurredAt }, sender)
}

/**
 * Reads (a `watermark`, or Instagram's seen `mid`), deliveries (a `watermark`) and reactions (to a
 * `mid`): recorded, as WhatsApp Cloud's statuses are, so a replay is a duplicate; never a row.
 */
async function statusDelivery(
  scope: Scope,
  event: Json,
  kind: 'read' | 'delivery' | 'reaction',
  status: Json,
  sender: string,
): Promise<ChannelDelivery> {
  const part = (value: unknown) =>
    typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : vendorId(value)
  const what =
    kind === 'reaction'
      ? [status.mid, status.action, status.reaction ?? 'none'].map(part)
      : [part(status.watermark) ?? part(status.mid)]
  if (!what.every((p): p is string => p !== null)) return scope.kept(`${kind}_without_id`, event)
  const parts = await Promise.all([kind, sender, ...what].map(keyPart))
  const key = scope.key('-status', parts.join(':'))
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
 * its `sticker_id`, a location by its coordinates; anything else the person sent (a share, a
 * post, a reel, a story mention, a template, a fallback) as a document of its URL and title, its
 * type in `content`, so that no message is dropped for what it carries.
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
  // Instagram's heart, sent as a message of its own.
  if (type === 'like_heart') return [{ kind: 'sticker', content: { type } }]
  const title = typeof payload?.title === 'string' ? payload.title : undefined
  // Nothing the person sent to show for it (a template's structure, an empty fallback).
  if (!attachment || !isKeyPart(type) || (!url && !title)) return []
  return [
    {
      kind: type.includes('reel') ? 'video' : 'document',
      ...(url ? { url } : {}),
      ...(title ? { caption: title } : {}),
      content: { type },
    },
  ]
}
