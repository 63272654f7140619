/**
 * Verifying a Telegram update (telegram.ts is the channel): the `secret_token` header, under the
 * tokens of the bot the path names.
 * @module
 */
import { equalsAny } from '../../shared/crypto'
import { type TenantSecrets, verifyForTenant } from './tenant-secrets'
import type { RequestParts, TenantVerdict, Verdict } from './types'

/** The part of a bot token before `:`. */
export const TELEGRAM_BOT_ID_PATTERN = /^\d{1,20}$/

export const TELEGRAM_SECRET_HEADER = 'x-telegram-bot-api-secret-token'

/** A shared secret, not an HMAC: no body integrity and no timestamp (dedup is the replay guard). */
export async function verifyTelegram(
  parts: RequestParts,
  secretTokens: readonly string[],
): Promise<Verdict> {
  // Rule 1: the header Telegram sends when the webhook was set with a secret_token.
  const offered = parts.headers.get(TELEGRAM_SECRET_HEADER)
  if (!offered) return { ok: false, reason: 'missing_headers' }
  // Rule 2: any configured token may match (rotation), every one compared in constant time.
  return equalsAny(secretTokens, offered) ? { ok: true } : { ok: false, reason: 'secret_mismatch' }
}

/**
 * Verifies with the tokens of the bot the path names (the Update names no bot); a bot id that is
 * not configured, or not a bot id at all, has no tokens: 401.
 */
export function verifyTelegramBot(
  parts: RequestParts,
  secretTokens: TenantSecrets,
  botId: string | null,
): Promise<TenantVerdict> {
  const bot = botId !== null && TELEGRAM_BOT_ID_PATTERN.test(botId) ? botId : null
  return verifyForTenant(secretTokens, bot, (tokens) => verifyTelegram(parts, tokens))
}
