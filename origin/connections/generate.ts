/**
 * Secrets the registry may make itself, where the operator chooses the value (the vendor does
 * not issue it): a Telegram bot's `secret_token` (given to `setWebhook`), a WeChat account's Token
 * and EncodingAESKey (typed into its console), an API tenant's key. A generated secret is answered
 * once, by the create or rotate that made it, and never again (only its fingerprint).
 * @module
 */
import type { ConnectionChannel } from '../../contract/connection'

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
const URL_SAFE = `${ALNUM}-_`

/** `length` characters of `alphabet`, without bias (rejection sampling over random bytes). */
function randomText(alphabet: string, length: number): string {
  const limit = 256 - (256 % alphabet.length)
  let out = ''
  while (out.length < length) {
    for (const byte of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length]
    }
  }
  return out
}

/** Per channel, the fields the registry can generate and how (each ≥ 256 random bits). */
export const GENERATORS: Partial<Record<ConnectionChannel, Record<string, () => string>>> = {
  // Telegram: 1-256 characters of A-Z a-z 0-9 _ -.
  telegram: { secret_token: () => randomText(URL_SAFE, 48) },
  // WeChat: a Token of 3-32 letters and digits; an EncodingAESKey of 43.
  wechat: { token: () => randomText(ALNUM, 32), aes_key: () => randomText(ALNUM, 43) },
  api: { api_key: () => `key_${randomText(URL_SAFE, 43)}` },
}

export const generatable = (channel: ConnectionChannel): string[] =>
  Object.keys(GENERATORS[channel] ?? {})
