/**
 * WeChat Official Accounts (公众号): XML pushes to `/webhooks/wechat/{account}`, the account being
 * its original id (`gh_…`, the `ToUserName` of every push), typed into the console's server URL.
 * The path picks the account's secrets before anything is read; the pushed `ToUserName` must be
 * that account (key scope check, gateway.ts), so one account's token never vouches for another.
 *
 * - plain mode: `signature = sha1(sort(token, timestamp, nonce))` in the query. It does not cover
 *   the body, so an account with an EncodingAESKey configured takes encrypted pushes only, and a
 *   plain query is good once: for the body it first came with, or for the console's GET check
 *   (its URL sits in access logs), claimed in Redis before anything is parsed (gateway.ts
 *   `claimSignatureOnce`). The same body again is the same push (its MsgId then makes it a
 *   duplicate); any other body is 401; Redis out of reach, 503, and WeChat tries again.
 * - encrypted (safe or compatible) mode: `encrypt_type=aes`, `msg_signature` over the four values
 *   (the `<Encrypt>` element the fourth), then AES-256-CBC with the current or previous
 *   EncodingAESKey (rotation), the plaintext ending with the account's AppID (wechat-crypto.ts).
 *   The signature covers the push: a replay within the window is the same push, and its key makes
 *   it a duplicate, so no nonce is stored.
 * - both: `timestamp` within {@link TIMESTAMP_WINDOW_SECONDS} of now.
 *
 * Keys (docs/keys.md's key table): messages `dedup:wechat:{account}:{MsgId}` / `{account}:{MsgId}`,
 * MsgId kept as the string it is (it exceeds 2^53); events (no MsgId) recorded, never rows, under
 * `dedup:wechat-event:{account}:{hash of FromUserName, CreateTime, Event, EventKey, MsgID}`.
 * WeChat waits 5 s and tries 3 times: "got it" is the plain text `success`, at once.
 * @module
 */
import { XMLParser } from 'fast-xml-parser'
import { channelTtlSetting } from '../../claims'
import { boundAttachments } from '../../contract/attachments'
import { keyPart } from '../../contract/delivery-key'
import { type Attachment, type InboundEventDraft, LIMITS } from '../../contract/event'
import { sha256Hex } from '../../shared/crypto'
import { rawValue, type StringEnv } from '../../shared/settings'
import { InvalidPayloadError, UnauthorizedError } from '../errors'
import { type ChannelReplies, retryLaterResponse } from './replies'
import { parseTenantSecrets, tenantSecretsRow } from './tenant-secrets'
import type {
  ChannelConfig,
  ChannelDelivery,
  DeliveryKey,
  RequestParts,
  WebhookChannel,
} from './types'
import { formatDeliveryKey } from './types'
import { isKeyPart, isoFromUnixSeconds, obj, reasonPart, str, vendorId } from './untrusted'
import { isEncodingAesKey } from './wechat-crypto'
import {
  ACCOUNT,
  decryptedMessage,
  verifyWeChat,
  verifyWeChatHandshake,
  type WeChatConfig,
} from './wechat-verify'
import { declaresDoctype } from './xml-scan'

export {
  TIMESTAMP_WINDOW_SECONDS,
  verifyWeChat,
  verifyWeChatHandshake,
  type WeChatConfig,
} from './wechat-verify'

const WECHAT_VARIABLES = [
  tenantSecretsRow('WECHAT_TOKENS_BY_ACCOUNT', "each Official Account's Token(s), by gh_ id"),
  tenantSecretsRow('WECHAT_AES_KEYS_BY_ACCOUNT', 'EncodingAESKeys by gh_ id: current|previous'),
  tenantSecretsRow('WECHAT_APP_IDS_BY_ACCOUNT', 'the AppID of each account with an AES key'),
  // WeChat retries within 15 s (5 s timeout, 3 tries): the default day covers it.
  channelTtlSetting('DEDUP_TTL_SECONDS_WECHAT'),
] as const
const [TOKENS, AES_KEYS, APP_IDS, DEDUP_TTL] = WECHAT_VARIABLES

/** WeChat's answer for "received, do not retry" (an empty body also works; `success` is advised). */
const wechatReplies: ChannelReplies = {
  ok: () => new Response('success', { headers: { 'content-type': 'text/plain; charset=UTF-8' } }),
  retryLater: retryLaterResponse,
}

/** WeChat drops the connection after 5 s and retries: answer within 4. */
export const wechat: WebhookChannel<'wechat', WeChatConfig, WeChatPush, typeof WECHAT_VARIABLES> = {
  name: 'wechat',
  eventChannels: ['wechat'],
  variables: WECHAT_VARIABLES,
  dedupTtl: DEDUP_TTL,
  paths: ['/wechat/:account'],
  budgetMs: 4_000,
  settings: wechatConfig,
  handshake: (query, config, params) => verifyWeChatHandshake(query, config, params.account),
  verify: (parts, config, params) => verifyWeChat(parts, config, params.account),
  parse: parseWeChat,
  classify(push, tenant) {
    if (tenant === null) throw new UnauthorizedError('wechat: no account')
    return classifyWeChat(push)
  },
  // Every message is a row and every event recorded: none is merely ignored.
  ignored: {},
  // What a replay parses: the decrypted push (the encrypted body's keys are the verifier's).
  replayText: (parts) => decryptedMessage(parts) ?? parts.body.text,
  replies: wechatReplies,
}

const ACCOUNT_RULE = { test: (id: string) => ACCOUNT.test(id), hint: 'a gh_ original id' }
/** What the console accepts as Token: 3-32 letters and digits. */
const TOKEN = /^[A-Za-z0-9]{3,32}$/
const APP_ID = /^wx[0-9a-f]{16}$/

function wechatConfig(env: StringEnv, warnings: string[]): ChannelConfig<WeChatConfig> {
  const tokens = parseTenantSecrets(
    TOKENS.name,
    rawValue(env, TOKENS.name),
    ACCOUNT_RULE,
    warnings,
    {
      isValid: (token) => TOKEN.test(token),
    },
  )
  if (tokens === null || tokens.size === 0) return { ok: false, missing: [TOKENS.name] }
  const aesKeys =
    parseTenantSecrets(AES_KEYS.name, rawValue(env, AES_KEYS.name), ACCOUNT_RULE, warnings, {
      noun: 'EncodingAESKey',
      isValid: isEncodingAesKey,
    }) ?? new Map<string, string[]>()
  const appIdLists =
    parseTenantSecrets(APP_IDS.name, rawValue(env, APP_IDS.name), ACCOUNT_RULE, warnings, {
      noun: 'AppID',
      isValid: (id) => APP_ID.test(id),
    }) ?? new Map<string, string[]>()
  const appIds = new Map([...appIdLists].map(([account, [first = '']]) => [account, first]))
  for (const account of aesKeys.keys()) {
    if (!tokens.has(account)) warnings.push(`${AES_KEYS.name} lists ${account}, which has no token`)
    if (!appIds.has(account)) {
      warnings.push(`${APP_IDS.name} lists no AppID of ${account}: its pushes are refused`)
    }
  }
  return { ok: true, value: { tokens: { kind: 'per-tenant', byTenant: tokens }, aesKeys, appIds } }
}

/** A push's fields: `<xml>`'s children, strings (or objects for nested ones such as ScanCodeInfo). */
export type WeChatPush = Record<string, unknown>

/**
 * Entities are never expanded (no DOCTYPE is taken at all), values stay strings (MsgId exceeds
 * 2^53), and nesting is bounded; the body was bounded in bytes before.
 */
const xmlParser = new XMLParser({
  processEntities: false,
  parseTagValue: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  ignoreAttributes: true,
  maxNestedTags: 8,
})

/** The `<xml>` element's children of an untrusted document; anything else is invalid (400). */
export function xmlRoot(text: string): WeChatPush {
  // Outside CDATA only: a user may well type "<!DOCTYPE html>", and that is their text.
  if (declaresDoctype(text)) {
    throw new InvalidPayloadError('wechat body has a DOCTYPE')
  }
  let parsed: unknown
  try {
    parsed = xmlParser.parse(text, true)
  } catch (err) {
    throw new InvalidPayloadError('wechat body is not valid XML', { cause: err })
  }
  const root = obj(obj(parsed)?.xml)
  if (!root) throw new InvalidPayloadError('wechat body has no <xml> element')
  return root
}

/** The decrypted message of an encrypted push, else the body itself. */
export function parseWeChat(parts: RequestParts): WeChatPush {
  return xmlRoot(decryptedMessage(parts) ?? parts.body.text)
}

/**
 * The delivery of one push. Its keys are scoped by `ToUserName`, which the gateway checks is the
 * account of the path whose secrets verified it (another account's push: 401, nothing written).
 */
export async function classifyWeChat(push: WeChatPush): Promise<ChannelDelivery> {
  const to = str(push.ToUserName)
  const from = vendorId(push.FromUserName)
  const type = str(push.MsgType)
  const occurredAt = isoFromUnixSeconds(str(push.CreateTime))
  if (!isKeyPart(to) || !from || !type || !occurredAt) {
    return { action: 'unrecognized', reason: 'wechat_push_unplaced' }
  }
  if (type === 'event') {
    // Events carry no MsgId: WeChat's FAQ keys them by FromUserName + CreateTime; Event, EventKey
    // (and a job's MsgID) tell apart two in one second. Acknowledged and remembered, no row.
    const material = [
      from,
      str(push.CreateTime),
      str(push.Event),
      str(push.EventKey),
      str(push.MsgID),
    ]
      .map((part) => part ?? '')
      .join('\n')
    const id = `e${(await sha256Hex(material)).slice(0, 32)}`
    return { action: 'record', key: { namespace: 'wechat-event', scope: to, id }, material }
  }
  const content = messageContent(push, type)
  // A message type this code does not know (file, miniprogrampage, ...): kept, never dropped.
  if (!content) return { action: 'unrecognized', reason: `wechat_type_${reasonPart(type)}` }
  const msgId = vendorId(push.MsgId, 64)
  if (!msgId) return { action: 'unrecognized', reason: 'wechat_message_without_id' }
  const key: DeliveryKey = { namespace: 'wechat', scope: to, id: await keyPart(msgId) }
  const attachments = boundAttachments(content.attachments)
  const draft: InboundEventDraft = {
    kind: 'message',
    channel: 'wechat',
    tenant: to,
    deliveryKey: formatDeliveryKey(key),
    messageKey: `${to}:${msgId}`,
    sender: { externalId: from },
    body: content.body.slice(0, LIMITS.body),
    occurredAt,
    ...(attachments ? { attachments } : {}),
  }
  return { action: 'forward', key, draft }
}

interface Content {
  body: string
  attachments: Attachment[]
}

const text = (push: WeChatPush, field: string): string | undefined => str(push[field]) ?? undefined

/** The row's text and media of each message type WeChat pushes; null for others. */
function messageContent(push: WeChatPush, type: string): Content | null {
  const mediaId = text(push, 'MediaId')
  switch (type) {
    case 'text':
      return { body: text(push, 'Content') ?? '', attachments: [] }
    case 'image':
      return { body: '', attachments: [{ kind: 'image', mediaId, url: text(push, 'PicUrl') }] }
    case 'voice': {
      const content = defined({
        format: text(push, 'Format'),
        recognition: text(push, 'Recognition'),
      })
      return { body: '', attachments: [{ kind: 'voice', mediaId, content }] }
    }
    case 'video':
    case 'shortvideo': {
      const content = defined({ thumbMediaId: text(push, 'ThumbMediaId') })
      return { body: '', attachments: [{ kind: 'video', mediaId, content }] }
    }
    case 'location':
      return { body: '', attachments: [{ kind: 'location', content: location(push) }] }
    case 'link':
      return {
        body: text(push, 'Title') ?? '',
        attachments: [
          { kind: 'document', url: text(push, 'Url'), caption: text(push, 'Description') },
        ],
      }
    default:
      return null
  }
}

function location(push: WeChatPush): Record<string, unknown> {
  const latitude = Number(text(push, 'Location_X'))
  const longitude = Number(text(push, 'Location_Y'))
  const valid = Number.isFinite(latitude) && Number.isFinite(longitude)
  return defined({
    ...(valid ? { latitude, longitude } : {}),
    scale: text(push, 'Scale'),
    address: text(push, 'Label'),
  })
}

function defined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined))
}
