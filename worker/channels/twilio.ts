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
import { keyPart } from '../../contract/delivery-key'
import type { RawBody } from '../../shared/body'
import { readUrl, setting } from '../../shared/settings'
import { retryLaterResponse } from './replies'
import type { TenantSecrets, TenantVariables } from './tenant-secrets'
import { sharedSecretRow, tenantSecrets, tenantSecretsRow, verifyForTenant } from './tenant-secrets'
import { accountTag, compactSid } from './twilio-keys'
import { twilioAttachments } from './twilio-media'
import { type TwilioVerifyOptions, verifyTwilio, withinParameterBound } from './twilio-signature'
import {
  type ChannelDelivery,
  type DeliveryKey,
  formatDeliveryKey,
  type RequestParts,
  type TenantVerdict,
  type WebhookChannel,
} from './types'
import { parseJsonObject, str, systemClock, vendorId } from './untrusted'

export {
  MAX_TWILIO_PARAMETERS,
  portVariants,
  signedUrl,
  type TwilioParams,
  type TwilioVerifyOptions,
  twilioSignature,
  verifyTwilio,
} from './twilio-signature'

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

/**
 * Verifies with the tokens of the account the request names (`AccountSid`, read before
 * verification the way {@link classifyTwilio} reads it: an untrusted hint that picks the tokens).
 */
export function verifyTwilioTenant(
  parts: RequestParts,
  authTokens: TenantSecrets,
  options: TwilioVerifyOptions = {},
): Promise<TenantVerdict> {
  // Shared tokens verify any account: nothing to read before the signature then. Past the bound
  // on parameters there is nothing to read (verifyTwilio refuses it).
  const isForm = !new URL(parts.url).searchParams.has('bodySHA256')
  const accountSid =
    authTokens.kind === 'shared' || (isForm && !withinParameterBound(parts.body.text))
      ? null
      : accountSidOf(parts)
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
