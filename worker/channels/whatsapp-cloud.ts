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
import { keyPart } from '../../contract/delivery-key'
import { LIMITS } from '../../contract/event'
import type { StringEnv } from '../../shared/settings'
import { InvalidPayloadError } from '../errors'
import {
  META_MAX_BODY_BYTES,
  type MetaAppVariables,
  metaAppConfig,
  metaSignature,
  verifyHandshake,
  verifyMetaSignature,
} from './meta-webhook'
import { plainReplies } from './replies'
import type { TenantSecrets } from './tenant-secrets'
import { sharedSecretRow, tenantSecretsRow } from './tenant-secrets'
import {
  type ChannelConfig,
  type ChannelDelivery,
  type Classified,
  formatDeliveryKey,
  type RequestParts,
  type TenantVerdict,
  type WebhookChannel,
} from './types'
import {
  isoFromUnixSeconds,
  list,
  obj,
  parseJsonObject,
  reasonPart,
  str,
  vendorId,
} from './untrusted'
import { WHATSAPP_CLOUD_IGNORED, whatsappContent } from './whatsapp-cloud-content'

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
  handshake: (query, config) => verifyHandshake(query, config.verifyTokens),
  verify: (parts, config) => verifyWhatsAppCloud(parts, config),
  parse: (parts) => parseJsonObject(parts.body.text, 'whatsapp cloud body'),
  classify: (payload) => classifyWhatsAppCloud(payload),
  ignored: WHATSAPP_CLOUD_IGNORED,
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
export async function classifyWhatsAppCloud(body: Json): Promise<Classified> {
  if (body.object !== 'whatsapp_business_account') {
    return { action: 'unrecognized', reason: 'wa_not_whatsapp_business_account' }
  }
  const changes = list(obj(body)?.entry).flatMap((entry) =>
    list(obj(entry)?.changes).map((change) => ({ entry: obj(entry), change: obj(change) })),
  )
  const items = (await Promise.all(changes.map(changeDeliveries))).flat()
  // Only what is claimed counts (an ignored change costs no subrequest): more is no Meta batch.
  const keyed = items.filter((item) => item.action !== 'ignore').length
  if (keyed > MAX_BATCH_ITEMS) throw new InvalidPayloadError('whatsapp batch too large')
  return items.length > 0 ? items : { action: 'ignore', reason: 'wa_no_messages' }
}

/** One change's items; what cannot be placed is kept in an envelope of its own. */
async function changeDeliveries({
  entry,
  change,
}: {
  entry: Json | null
  change: Json | null
}): Promise<ChannelDelivery[]> {
  const value = obj(change?.value)
  const envelope = (item: Json): string =>
    JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [{ id: entry?.id, changes: [{ field: change?.field, value: { ...value, ...item } }] }],
    })
  const kept = (reason: string, item: Json = {}): ChannelDelivery => ({
    action: 'unrecognized',
    reason,
    payload: envelope(item),
  })
  const field = str(change?.field) ?? 'none'
  if (field !== 'messages') {
    const reason = `wa_field_${reasonPart(field)}`
    return [
      Object.hasOwn(WHATSAPP_CLOUD_IGNORED, reason) ? { action: 'ignore', reason } : kept(reason),
    ]
  }
  const numberId = vendorId(obj(value?.metadata)?.phone_number_id, 64)
  // Unkeyable (Meta documents both always present): kept whole, never guessed at.
  if (!value || numberId === null) return [kept('wa_change_without_phone_number_id')]
  const names = new Map<string, string>()
  for (const contact of list(value.contacts)) {
    const name = str(obj(obj(contact)?.profile)?.name)
    for (const id of [str(obj(contact)?.wa_id), str(obj(contact)?.user_id)]) {
      if (id && name) names.set(id, name.slice(0, LIMITS.name))
    }
  }
  const number = { id: numberId, tenant: await keyPart(numberId) }
  const items: ChannelDelivery[] = await Promise.all([
    ...list(value.messages).map(async (m): Promise<ChannelDelivery> => {
      const delivery = await messageDelivery(number, obj(m), names)
      return typeof delivery === 'string'
        ? kept(delivery, { messages: [m], statuses: [] })
        : delivery
    }),
    ...list(value.statuses).map(
      async (s): Promise<ChannelDelivery> =>
        (await statusDelivery(number, obj(s))) ??
        kept('wa_status_without_id', { messages: [], statuses: [s] }),
    ),
  ])
  return list(value.errors).length > 0
    ? [...items, { action: 'ignore', reason: 'wa_errors' }]
    : items
}

/** The business number of a change: its id as Meta sends it (the verified scope), and as a tenant. */
interface BusinessNumber {
  id: string
  /** The id as one key part and a row's tenant (a numeric id as it is). */
  tenant: string
}

type Names = ReadonlyMap<string, string>

/**
 * A message's delivery; why not when it cannot be placed (no id, no sender, content of a shape
 * this code does not know: the caller keeps it as unrecognized). A documented non-message type
 * (reaction, system, request_welcome) is `ignore`.
 */
async function messageDelivery(
  number: BusinessNumber,
  message: Json | null,
  names: Names,
): Promise<ChannelDelivery | string> {
  const wamid = vendorId(message?.id)
  if (!message || wamid === null) return 'wa_message_without_id'
  const from = senderOf(message)
  if (!from) return 'wa_message_without_sender'
  const content = whatsappContent(message)
  const type = `wa_type_${reasonPart(str(message.type))}`
  if (content === null) return type
  if ('ignore' in content) return { action: 'ignore', reason: content.ignore }
  const empty = content.body.trim() === '' && content.attachments.length === 0
  if (content.kind === 'message' && empty) return `${type}_empty`
  const key = {
    namespace: 'wa-cloud',
    scope: number.id,
    ...(number.tenant === number.id ? {} : { scopeTag: number.tenant }),
    id: await keyPart(wamid),
  }
  const name = names.get(from)
  const attachments = boundAttachments(content.attachments)
  return {
    action: 'forward',
    key,
    draft: {
      kind: content.kind,
      channel: 'whatsapp',
      tenant: number.tenant,
      deliveryKey: formatDeliveryKey(key),
      messageKey: `${number.tenant}:${content.target ?? wamid}`,
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

/** A status, recorded in its own namespace (never a row); null when it names no message. */
async function statusDelivery(
  number: BusinessNumber,
  status: Json | null,
): Promise<ChannelDelivery | null> {
  const wamid = vendorId(status?.id)
  const state = vendorId(status?.status, 64)
  if (!status || wamid === null || state === null) return null
  const code = obj(list(status.errors)[0])?.code
  const errorCode = typeof code === 'number' && Number.isSafeInteger(code) ? [String(code)] : []
  const id = (await Promise.all([wamid, state, ...errorCode].map(keyPart))).join(':')
  // Its hash covers the status itself, not the batch it came in.
  const tag = number.tenant === number.id ? {} : { scopeTag: number.tenant }
  const key = { namespace: 'wa-cloud-status', scope: number.id, ...tag, id }
  return { action: 'record', key, material: JSON.stringify(status) }
}
