/**
 * WhatsApp Cloud API (Meta): the GET subscription handshake, and POSTs that are batches
 * (`entry[].changes[].value.messages[]` / `statuses[]`, several phone numbers), each item its own
 * delivery (worker/deliver-batch.ts). Keys (docs/keys.md's key table): messages scoped by the receiving
 * phone_number_id (Meta does not say what a wamid is unique within), an edit / revoke under its
 * original's message key, statuses recorded in their own namespace, never rows.
 * @module
 */
import { channelTtlSetting } from '../../claims'
import { boundAttachments } from '../../contract/attachments'
import { type Attachment, type EventKind, jsonBytes, LIMITS } from '../../contract/event'
import type { StringEnv } from '../../contract/settings'
import type { ChannelConfig } from '../config'
import { InvalidPayloadError } from '../errors'
import type { TenantSecrets, TenantVerdict } from '../tenants'
import { sharedSecretRow, tenantSecretsRow } from '../tenants'
import {
  isMetaId,
  META_MAX_BODY_BYTES,
  type MetaAppVariables,
  metaAppConfig,
  metaSignature,
  verifyHandshake,
  verifyMetaSignature,
} from './meta-webhook'
import { plainReplies } from './replies'
import type { ChannelDelivery, Classified, RequestParts, WebhookChannel } from './types'
import { formatDeliveryKey } from './types'
import { isKeyPart, isoFromUnixSeconds, list, obj, parseJsonObject, str } from './untrusted'

export interface WhatsAppCloudConfig {
  /** Shared (WHATSAPP_APP_SECRET: any number), or by app id (WHATSAPP_APP_SECRETS_BY_APP). */
  appSecrets: TenantSecrets
  /** By app id: the phone number ids each app writes for (WHATSAPP_PHONE_NUMBERS_BY_APP). */
  phoneNumbers: ReadonlyMap<string, ReadonlySet<string>>
  /** The Dashboard's verify token(s) for the GET handshake (WHATSAPP_VERIFY_TOKEN). */
  verifyTokens: readonly string[]
}

type Json = Record<string, unknown>

const WHATSAPP_VARIABLES = [
  sharedSecretRow('WHATSAPP_APP_SECRET', 'app secrets of a single app: any phone number'),
  tenantSecretsRow('WHATSAPP_APP_SECRETS_BY_APP', 'each app id its own app secrets'),
  sharedSecretRow('WHATSAPP_VERIFY_TOKEN', "the Dashboard's verify token(s) for the handshake"),
  tenantSecretsRow('WHATSAPP_PHONE_NUMBERS_BY_APP', 'the phone_number_ids each app writes for'),
  // Meta retries a failed delivery for up to 7 days: a day more covers its horizon.
  channelTtlSetting('DEDUP_TTL_SECONDS_WHATSAPP_CLOUD', 8 * 86_400),
] as const
const [APP_SECRET, APP_SECRETS_BY_APP, VERIFY_TOKEN, PHONE_NUMBERS_BY_APP, DEDUP_TTL] =
  WHATSAPP_VARIABLES

/** Meta states no timeout (third parties: 3-20 s): answer within the shortest, less a margin. */
export const whatsappCloud: WebhookChannel<
  'whatsapp-cloud',
  WhatsAppCloudConfig,
  Json,
  typeof WHATSAPP_VARIABLES
> = {
  name: 'whatsapp-cloud',
  eventChannels: ['whatsapp'],
  variables: WHATSAPP_VARIABLES,
  dedupTtl: DEDUP_TTL,
  paths: ['/whatsapp-cloud'],
  budgetMs: 2_500,
  maxBodyBytes: META_MAX_BODY_BYTES,
  settings: whatsappCloudConfig,
  pick: (settings) => settings['whatsapp-cloud'],
  handshake: (query, config) => verifyHandshake(query, config.verifyTokens),
  verify: (parts, config) => verifyWhatsAppCloud(parts, config),
  parse: (parts) => parseJsonObject(parts.body.text, 'whatsapp cloud body'),
  classify: (payload) => classifyWhatsAppCloud(payload),
  replies: plainReplies,
}

const WA_VARIABLES: MetaAppVariables = {
  appSecret: APP_SECRET,
  appSecretsByApp: APP_SECRETS_BY_APP,
  verifyToken: VERIFY_TOKEN,
  idsByApp: PHONE_NUMBERS_BY_APP,
  idNoun: 'phone_number_id',
}

function whatsappCloudConfig(
  env: StringEnv,
  warnings: string[],
): ChannelConfig<WhatsAppCloudConfig> {
  const meta = metaAppConfig(env, WA_VARIABLES, warnings)
  if (!meta.ok) return meta
  const { appSecrets, idsByApp, verifyTokens } = meta.value
  return { ok: true, value: { appSecrets, phoneNumbers: idsByApp, verifyTokens } }
}

export { metaSignature as whatsappSignature, verifyHandshake }

/**
 * Meta's signature check (meta-webhook.ts). The body names no app (`entry[].id` is the WABA); the
 * app whose secret matched is the tenant, and its phone numbers are the scopes its items may be
 * keyed under (any other number: 401, nothing written).
 */
export function verifyWhatsAppCloud(
  parts: RequestParts,
  config: Pick<WhatsAppCloudConfig, 'appSecrets' | 'phoneNumbers'>,
): Promise<TenantVerdict> {
  return verifyMetaSignature(parts, config.appSecrets, config.phoneNumbers)
}

export const MAX_BATCH_ITEMS = 1_000
/** Every message and status of every change of every entry (Meta batches at most 1,000). */
export function classifyWhatsAppCloud(body: Json): Classified {
  if (body.object !== 'whatsapp_business_account') {
    return { action: 'ignore', reason: 'wa_not_whatsapp_business_account' }
  }
  const changes = list(obj(body)?.entry).flatMap((entry) => list(obj(entry)?.changes))
  const items = changes.flatMap((change) => changeDeliveries(obj(change)))
  // Only what is claimed counts (an ignored change costs no subrequest): more is no Meta batch.
  const keyed = items.filter((item) => item.action !== 'ignore').length
  if (keyed > MAX_BATCH_ITEMS) throw new InvalidPayloadError('whatsapp batch too large')
  return items.length > 0 ? items : { action: 'ignore', reason: 'wa_no_messages' }
}

function changeDeliveries(change: Json | null): ChannelDelivery[] {
  if (change?.field !== 'messages') return [{ action: 'ignore', reason: 'wa_other_field' }]
  const value = obj(change.value)
  const phoneNumberId = str(obj(value?.metadata)?.phone_number_id)
  // Unkeyable (Meta documents both always present): acknowledged and logged, never guessed at.
  if (!value || phoneNumberId === null || !isMetaId(phoneNumberId)) {
    return [{ action: 'ignore', reason: 'wa_change_without_phone_number_id' }]
  }
  const names = new Map<string, string>()
  for (const contact of list(value.contacts)) {
    const name = str(obj(obj(contact)?.profile)?.name)
    for (const id of [str(obj(contact)?.wa_id), str(obj(contact)?.user_id)]) {
      if (id && name) names.set(id, name.slice(0, LIMITS.name))
    }
  }
  return [
    ...list(value.messages).map((m) => messageDelivery(phoneNumberId, obj(m), names)),
    ...list(value.statuses).map((s) => statusDelivery(phoneNumberId, obj(s))),
    ...(list(value.errors).length > 0 ? [{ action: 'ignore', reason: 'wa_errors' } as const] : []),
  ]
}

/** A wamid goes into Redis keys: base64-like (`wamid.HBgL…RgA=`), bounded, no `:`. */
const WAMID = /^[A-Za-z0-9._+/=-]{1,256}$/
const isWamid = (id: string | null): id is string => id !== null && WAMID.test(id)
type Names = ReadonlyMap<string, string>

function messageDelivery(numberId: string, message: Json | null, names: Names): ChannelDelivery {
  const wamid = str(message?.id)
  if (!message || !isWamid(wamid)) return { action: 'ignore', reason: 'wa_message_without_id' }
  const from = senderOf(message)
  if (!from) return { action: 'ignore', reason: 'wa_message_without_sender' }
  const content = contentOf(message)
  if ('ignore' in content) return { action: 'ignore', reason: content.ignore }
  const key = { namespace: 'wa-cloud', scope: numberId, id: wamid }
  const name = names.get(from)
  const attachments = boundAttachments(content.attachments)
  return {
    action: 'forward',
    key,
    draft: {
      kind: content.kind,
      channel: 'whatsapp',
      tenant: numberId,
      deliveryKey: formatDeliveryKey(key),
      messageKey: `${numberId}:${content.target ?? wamid}`,
      sender: { externalId: from.slice(0, LIMITS.key), ...(name ? { displayName: name } : {}) },
      body: content.body.slice(0, LIMITS.body),
      occurredAt: isoFromUnixSeconds(message.timestamp) ?? new Date().toISOString(),
      ...(attachments ? { attachments } : {}),
    },
  }
}

/** A business-scoped user id: country code, dot, alphanumerics (`US.1349…`, `US.ENT.1181…`). */
const BSUID = /^[A-Z]{2}(\.[A-Za-z0-9]{1,128}){1,2}$/

/**
 * Who sent it: the phone number (`from`: what the customer's earlier messages were filed under),
 * else the business-scoped user id (`from_user_id`) Meta sends instead for a user whose username
 * hides the number. A BSUID is never all digits, so it cannot be mistaken for a phone number.
 */
function senderOf(message: Json): string | null {
  const bsuid = str(message.from_user_id)
  return str(message.from) ?? (bsuid !== null && BSUID.test(bsuid) ? bsuid : null)
}

/** What a message says; `target`: the wamid an edit or a revoke is about. */
type Content = { kind: EventKind; body: string; attachments: Attachment[]; target?: string }

const MEDIA = new Set(['image', 'video', 'audio', 'document', 'sticker'])

/** What a message says, by its type (vendor-protocols-2 §1.4), or why it is not one we store. */
function contentOf(message: Json, nested = false): Content | { ignore: string } {
  const type = str(message.type) ?? 'none'
  const part = obj(message[type])
  const plain = (body: unknown, attachments: Attachment[] = []): Content => ({
    kind: 'message',
    body: typeof body === 'string' ? body : '',
    attachments,
  })
  if (type === 'text') return plain(part?.text ?? part?.body)
  if (type === 'button') return plain(part?.text)
  if (type === 'interactive') {
    const reply = obj(part?.button_reply) ?? obj(part?.list_reply) ?? obj(part?.nfm_reply)
    return plain(reply?.title ?? reply?.body)
  }
  if (MEDIA.has(type) && part) return plain(part.caption, [media(type, part)])
  if (type === 'location' && part) {
    const { latitude, longitude, name, address, url } = part
    return plain('', [{ kind: 'location', content: { latitude, longitude, name, address, url } }])
  }
  if (type === 'contacts') {
    return plain('', [{ kind: 'contacts', content: boundedContacts(list(message.contacts)) }])
  }
  const original = str(part?.original_message_id)
  if (!nested && (type === 'edit' || type === 'revoke') && isWamid(original)) {
    if (type === 'revoke') return { kind: 'delete', body: '', attachments: [], target: original }
    const edited = contentOf(obj(part?.message) ?? {}, true)
    return 'ignore' in edited ? edited : { ...edited, kind: 'edit', target: original }
  }
  // reaction, unsupported, system, order, ...: acknowledged, not stored.
  return { ignore: `wa_type_${isKeyPart(type) ? type.slice(0, 32) : 'other'}` }
}

function media(type: string, part: Json): Attachment {
  const kind = type === 'audio' && part.voice === true ? 'voice' : (type as Attachment['kind'])
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined)
  const { id, url, mime_type, filename, caption } = part
  return {
    kind,
    ...{ mediaId: text(id), url: text(url), mimeType: text(mime_type) },
    ...{ fileName: text(filename), caption: text(caption) },
  }
}

/** Contact cards within the contract's 16 KiB: at most 20, whole, else names and phones only. */
function boundedContacts(contacts: unknown[]): Json {
  const whole = contacts.slice(0, 20)
  if (jsonBytes(whole) < LIMITS.content - 16) return { contacts: whole }
  const slim = (c: unknown) => ({ name: obj(obj(c)?.name)?.formatted_name, phones: obj(c)?.phones })
  return { contacts: whole.map(slim) }
}

function statusDelivery(phoneNumberId: string, status: Json | null): ChannelDelivery {
  const wamid = str(status?.id)
  const state = str(status?.status)
  if (!status || !isWamid(wamid) || !isKeyPart(state)) {
    return { action: 'ignore', reason: 'wa_status_without_id' }
  }
  const code = obj(list(status.errors)[0])?.code
  const errorCode = typeof code === 'number' && Number.isSafeInteger(code) ? [String(code)] : []
  const id = [wamid, state, ...errorCode].join(':')
  // Its hash covers the status itself, not the batch it came in.
  const key = { namespace: 'wa-cloud-status', scope: phoneNumberId, id }
  return { action: 'record', key, material: JSON.stringify(status) }
}
