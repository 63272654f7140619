/**
 * Where a shared path's tenant is known before verification (Telegram: the path's bot or the
 * pathless TELEGRAM_BOT_ID; WeChat: the path's account; Twilio: the form's, or a JSON body's top-level, AccountSid), that
 * account, so the registry is asked first (`idx:<channel>:<account>`, which the publisher writes
 * for every connection): a tenant imported into the registry and then disabled is refused there,
 * never verified by its old variable. Only picks which secrets to try; a forged account fails
 * the signature, and the verifier checks the tenant it names again.
 * @module
 */
import { CONNECTION_KINDS, type ConnectionChannel } from '../../contract/connection'
import type { PathParams, RequestParts } from '../channels/types'
import type { Env } from '../env'
import { stringAt } from './json-prefix'

/** How far into a Twilio form its AccountSid is looked for (Twilio sends it among the first). */
export const ACCOUNT_SCAN_BYTES = 8 * 1024

/** The channels whose shared path names its account before verification. */
const BY_PATH: Partial<Record<ConnectionChannel, (params: PathParams, env: Env) => string | null>> =
  {
    telegram: (params, env) =>
      params.botId ??
      (env as unknown as Record<string, unknown>).TELEGRAM_BOT_ID?.toString().trim() ??
      null,
    wechat: (params) => params.account ?? null,
  }

/** Twilio's form's AccountSid, from a bounded prefix of the body (one linear scan). */
export function twilioAccountSid(text: string): string | null {
  const head = text.slice(0, ACCOUNT_SCAN_BYTES)
  const match = /(?:^|&)AccountSid=(AC[0-9a-f]{32})(?=&|$)/.exec(head)
  return match?.[1] ?? null
}

/**
 * The AccountSid a Twilio request names: a JSON body (its URL carries `bodySHA256`, as
 * worker/channels/twilio.ts reads it) names it at the top level, read from a bounded prefix;
 * without this a JSON body found no hint and its old variable verified a registry-disabled tenant.
 */
export function twilioAccountOf(parts: RequestParts): string | null {
  const isJson = new URL(parts.url).searchParams.has('bodySHA256')
  return isJson ? stringAt(parts.body.text, ['AccountSid']) : twilioAccountSid(parts.body.text)
}

/** Whether a channel's shared path names its account before verification. */
export function hasAccountHint(channel: string): channel is ConnectionChannel {
  return channel === 'twilio' || Object.hasOwn(BY_PATH, channel)
}

/** The account a shared-path request names, if of the form the channel's accounts take. */
export async function accountHintOf(
  channel: ConnectionChannel,
  params: PathParams,
  env: Env,
  body: () => Promise<RequestParts>,
): Promise<string | null> {
  const hint =
    channel === 'twilio' ? twilioAccountOf(await body()) : (BY_PATH[channel]?.(params, env) ?? null)
  if (!hint) return null
  return CONNECTION_KINDS[channel].account.pattern.test(hint) ? hint : null
}
