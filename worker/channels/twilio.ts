/**
 * Twilio Programmable Messaging: inbound WhatsApp / SMS messages and status callbacks.
 *
 * Keys (see docs/keys.md's key table):
 * - inbound delivery: `dedup:{wa|sms}:{account tag}:{compact MessageSid}`; message key
 *   `{AccountSid}:{MessageSid}` (a MessageSid is unique within its account).
 * - status callback: `dedup:tw-status:{account tag}:{compact MessageSid}:{MessageStatus}[:{ErrorCode}]`,
 *   its own namespace: an outbound message's statuses share its MessageSid, so keying them like
 *   inbound messages would swallow the later statuses (and they are never message rows).
 * Media (`NumMedia`, `MediaUrl{N}`) become the event's attachments (twilio-media.ts).
 * Redis keys of at most 43 characters cost 88 B (MEMORY USAGE) and longer ones 104 B and more, so
 * the SIDs are written compactly (twilio-keys.ts): the MessageSid losslessly, the account as a
 * 48-bit tag of its SHA-256. Log lines name the same key as Redis.
 * @module
 */

import { channelTtlSetting } from '../../claims'
import type { RawBody } from '../../contract/body'
import { hmac, sha256Hex, timingSafeEqual, toBase64 } from '../../contract/crypto'
import { keyPart } from '../../contract/delivery-key'
import { readUrl, setting } from '../../contract/settings'
import type { TenantSecrets, TenantVariables, TenantVerdict } from '../tenants'
import { sharedSecretRow, tenantSecrets, tenantSecretsRow, verifyForTenant } from '../tenants'
import { retryLaterResponse } from './replies'
import { accountTag, compactSid } from './twilio-keys'
import { twilioAttachments } from './twilio-media'
import type {
  ChannelDelivery,
  DeliveryKey,
  RequestParts,
  Verdict,
  VerifyOptions,
  WebhookChannel,
} from './types'
import { formatDeliveryKey } from './types'
import { parseJsonObject, str, systemClock, vendorId } from './untrusted'

export interface TwilioConfig {
  /** By `AccountSid` (TWILIO_AUTH_TOKENS_BY_ACCOUNT), or shared (TWILIO_AUTH_TOKEN). */
  authTokens: TenantSecrets
  /** The public origin Twilio calls (behind a proxy `request.url` is not what Twilio signed). */
  publicBaseUrl: string | null
}

const TWILIO_VARIABLES = [
  sharedSecretRow('TWILIO_AUTH_TOKEN', 'auth tokens of a single tenant: any AccountSid'),
  tenantSecretsRow('TWILIO_AUTH_TOKENS_BY_ACCOUNT', 'each AccountSid its own auth tokens'),
  setting({
    name: 'PUBLIC_BASE_URL',
    kind: 'url',
    secret: false,
    doc: 'the public origin Twilio signs (behind a proxy); unset: the request URL',
  }),
  channelTtlSetting('DEDUP_TTL_SECONDS_TWILIO'),
] as const

const TWILIO_TOKENS: TenantVariables = {
  shared: TWILIO_VARIABLES[0],
  perTenant: TWILIO_VARIABLES[1],
  rule: { test: (id) => /^AC[0-9a-fA-F]{32}$/.test(id), hint: 'an AccountSid (AC + 32 hex)' },
}

/** Twilio waits 15 s (`tt`) for an answer; it wants TwiML, an empty `<Response/>` = no reply. */
export const twilio: WebhookChannel<
  'twilio',
  TwilioConfig,
  TwilioPayload,
  typeof TWILIO_VARIABLES
> = {
  name: 'twilio',
  eventChannels: ['sms', 'whatsapp'],
  variables: TWILIO_VARIABLES,
  dedupTtl: TWILIO_VARIABLES[3],
  paths: ['/twilio'],
  budgetMs: 10_000,
  settings(env, warnings) {
    const tokens = tenantSecrets(env, TWILIO_TOKENS, warnings)
    if (!tokens.ok) return tokens
    const publicBaseUrl = readUrl(env, TWILIO_VARIABLES[2], warnings)
    return { ok: true, value: { authTokens: tokens.value, publicBaseUrl } }
  },
  pick: (settings) => settings.twilio,
  verify: (parts, config) =>
    verifyTwilioTenant(parts, config.authTokens, { publicBaseUrl: config.publicBaseUrl }),
  parse: (parts) => parseTwilio(parts.body, parts.url),
  classify: (payload) => classifyTwilio(payload),
  // Every inbound message and status callback is a row or recorded: none is merely ignored.
  ignored: {},
  replies: {
    ok: () =>
      new Response('<?xml version="1.0" encoding="UTF-8"?><Response/>', {
        status: 200,
        headers: { 'content-type': 'text/xml; charset=utf-8' },
      }),
    retryLater: retryLaterResponse,
  },
}

/** Parameters as received: a name may repeat. */
export type TwilioParams = ReadonlyArray<readonly [string, string]>

/**
 * base64 HMAC-SHA1(token, url + every param name+value), names in Unix (code unit) order. Values
 * of a repeated name are de-duplicated and sorted, as twilio-node and twilio-python do.
 */
export async function twilioSignature(
  authToken: string,
  url: string,
  params: TwilioParams,
): Promise<string> {
  const byName = new Map<string, Set<string>>()
  for (const [name, value] of params) {
    const values = byName.get(name) ?? new Set<string>()
    values.add(value)
    byName.set(name, values)
  }
  let data = url
  for (const name of [...byName.keys()].sort()) {
    for (const value of [...(byName.get(name) ?? [])].sort()) data += name + value
  }
  return toBase64(await hmac(authToken, 'SHA-1', data))
}

export interface TwilioVerifyOptions extends VerifyOptions {
  /** PUBLIC_BASE_URL: when set, the URL Twilio signed is this + the request's path and query. */
  publicBaseUrl?: string | null
}

/** The URL Twilio signed, as configured: the public base when one is set, else `request.url`. */
export function signedUrl(requestUrl: string, publicBaseUrl?: string | null): string {
  if (!publicBaseUrl) return requestUrl
  const url = new URL(requestUrl)
  return `${publicBaseUrl.replace(/\/+$/, '')}${url.pathname}${url.search}`
}

/**
 * Twilio keeps the port for some products and drops it for others, so (like twilio-node) both
 * forms are tried: with an explicit port (the scheme's default when none is given) and without.
 */
export function portVariants(url: string): string[] {
  const parsed = new URL(url)
  const withoutPort = new URL(url)
  withoutPort.port = ''
  const userInfo = parsed.username
    ? `${parsed.username}${parsed.password ? `:${parsed.password}` : ''}@`
    : ''
  const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80')
  const withPort = `${parsed.protocol}//${userInfo}${parsed.hostname}:${port}${parsed.pathname}${parsed.search}`
  return [withoutPort.toString(), withPort]
}

export async function verifyTwilio(
  parts: RequestParts,
  authTokens: readonly string[],
  options: TwilioVerifyOptions = {},
): Promise<Verdict> {
  // Rule 1: the signature header.
  const signature = parts.headers.get('x-twilio-signature')
  if (!signature) return { ok: false, reason: 'missing_headers' }
  // Rule 2: the URL Twilio signed (public base behind a proxy), with and without the port.
  let url: string
  try {
    url = signedUrl(parts.url, options.publicBaseUrl)
  } catch {
    return { ok: false, reason: 'unparseable_url' }
  }
  // Rule 3: a JSON body is bound by `bodySHA256` in the signed URL, and the signature covers the
  // URL alone; a form body is bound by signing every parameter (never a whitelist).
  const bodyHash = new URL(url).searchParams.get('bodySHA256')
  let params: TwilioParams
  if (bodyHash !== null) {
    if (!timingSafeEqual(await sha256Hex(parts.body.bytes), bodyHash.toLowerCase())) {
      return { ok: false, reason: 'body_hash_mismatch' }
    }
    params = []
  } else {
    params = [...new URLSearchParams(parts.body.text)]
  }
  // Rule 4: any configured token may match (rotation), compared in constant time.
  for (const token of authTokens) {
    for (const candidate of portVariants(url)) {
      if (timingSafeEqual(await twilioSignature(token, candidate, params), signature)) {
        return { ok: true }
      }
    }
  }
  return { ok: false, reason: 'signature_mismatch' }
}

/**
 * Verifies with the tokens of the account the request names (`AccountSid`, read before
 * verification the way {@link classifyTwilio} reads it: an untrusted hint that picks the tokens).
 */
export function verifyTwilioTenant(
  parts: RequestParts,
  authTokens: TenantSecrets,
  options: TwilioVerifyOptions = {},
): Promise<TenantVerdict> {
  // Shared tokens verify any account: nothing to read before the signature then.
  const accountSid = authTokens.kind === 'shared' ? null : accountSidOf(parts)
  return verifyForTenant(authTokens, accountSid, (tokens) => verifyTwilio(parts, tokens, options))
}

function accountSidOf(parts: RequestParts): string | null {
  try {
    return str(parseTwilio(parts.body, parts.url).get('AccountSid'))
  } catch {
    return null // unparseable: no account, hence no tokens to try
  }
}

/** Parameters by name (the first value of a repeated name). */
export type TwilioPayload = ReadonlyMap<string, string>

export function parseTwilio(body: RawBody, requestUrl: string): TwilioPayload {
  const isJson = new URL(requestUrl).searchParams.has('bodySHA256')
  const entries: Array<[string, string]> = []
  if (isJson) {
    for (const [name, value] of Object.entries(parseJsonObject(body.text, 'twilio body'))) {
      if (typeof value === 'string' || typeof value === 'number')
        entries.push([name, String(value)])
    }
  } else {
    entries.push(...new URLSearchParams(body.text))
  }
  const params = new Map<string, string>()
  for (const [name, value] of entries) if (!params.has(name)) params.set(name, value)
  return params
}

export interface TwilioClassifyOptions {
  /** Twilio sends no message time; the receive time stands in. */
  nowSeconds?: () => number
}

export async function classifyTwilio(
  params: TwilioPayload,
  options: TwilioClassifyOptions = {},
): Promise<ChannelDelivery> {
  const accountSid = vendorId(params.get('AccountSid'), 64)
  const messageSid = vendorId(params.get('MessageSid')) ?? vendorId(params.get('SmsSid'))
  if (!accountSid || !messageSid) return { action: 'unrecognized', reason: 'twilio_without_sid' }
  const sidPart = await keyPart(compactSid(messageSid))

  const status = params.get('MessageStatus')
  if (status !== undefined) {
    const state = vendorId(status, 64)
    const errorCode = params.get('ErrorCode') ? vendorId(params.get('ErrorCode'), 64) : null
    if (!state || (params.get('ErrorCode') && !errorCode)) {
      return { action: 'unrecognized', reason: 'twilio_status_unplaced' }
    }
    const parts = await Promise.all([state, ...(errorCode ? [errorCode] : [])].map(keyPart))
    const id = [sidPart, ...parts].join(':')
    const scopeTag = await accountTag(accountSid)
    return { action: 'record', key: { namespace: 'tw-status', scope: accountSid, scopeTag, id } }
  }

  const from = str(params.get('From'))
  if (!from) return { action: 'unrecognized', reason: 'twilio_message_without_from' }
  const channel = from.startsWith('whatsapp:') ? 'whatsapp' : 'sms'
  const key: DeliveryKey = {
    namespace: channel === 'whatsapp' ? 'wa' : 'sms',
    scope: accountSid,
    scopeTag: await accountTag(accountSid),
    id: sidPart,
  }
  const now = (options.nowSeconds ?? systemClock)()
  const profileName = str(params.get('ProfileName'))
  const attachments = twilioAttachments(params)
  const body = params.get('Body') ?? ''
  // Nothing a row could show (a new kind of message with its content in other parameters): kept.
  if (body.trim() === '' && !attachments) {
    return { action: 'unrecognized', reason: 'twilio_message_empty' }
  }
  return {
    action: 'forward',
    key,
    draft: {
      kind: 'message',
      channel,
      tenant: accountSid,
      deliveryKey: formatDeliveryKey(key),
      messageKey: `${accountSid}:${messageSid}`,
      sender: { externalId: from, ...(profileName ? { displayName: profileName } : {}) },
      body,
      occurredAt: new Date(now * 1000).toISOString(),
      ...(attachments ? { attachments } : {}),
    },
  }
}
