/**
 * What the edge takes, beyond a kind's forms: the Worker lays a connection over its channel's
 * per-tenant variables (worker/connections/variables.ts) and reads them with the channel's own
 * parser, which drops a value it would not accept from a variable (a Telegram token outside
 * Telegram's alphabet, a WeChat Token, EncodingAESKey or AppID of another form) and answers a
 * channel with nothing left 503. So does a Slack app or a Meta app without ids: it writes for no
 * workspace, number, Page or account. The registry refuses these up front, naming the field,
 * rather than publish a connection every request of which the edge answers 503.
 * @module
 */
import {
  CONNECTION_KINDS,
  type ConnectionChannel,
  type ConnectionKind,
} from '../../contract/connection'
import { invalid } from './errors'

export interface ValueRule {
  readonly pattern: RegExp
  readonly hint: string
}

/** Per channel and secret field: the form its edge parser accepts (worker/channels/*.ts). */
export const SECRET_RULES: Partial<Record<ConnectionChannel, Record<string, ValueRule>>> = {
  // worker/channels/telegram.ts TELEGRAM_TOKEN_PATTERN (Telegram's own rule for secret_token).
  telegram: {
    secret_token: { pattern: /^[A-Za-z0-9_-]{1,256}$/, hint: '1-256 of A-Z a-z 0-9 _ -' },
  },
  // worker/channels/wechat.ts TOKEN, wechat-crypto.ts ENCODING_AES_KEY (what its console gives).
  wechat: {
    token: { pattern: /^[A-Za-z0-9]{3,32}$/, hint: '3-32 letters and digits' },
    aes_key: { pattern: /^[A-Za-z0-9+/]{43}$/, hint: '43 base64 characters' },
  },
  // worker/connections/api-keys.ts compares a key's SHA-256 hex with it (what API_KEYS holds).
  api: {
    api_key_hash: { pattern: /^[0-9a-f]{64}$/, hint: "a key's SHA-256: 64 lowercase hex" },
  },
}

/** Per channel and setting: the form its edge parser accepts. */
export const SETTING_RULES: Partial<Record<ConnectionChannel, Record<string, ValueRule>>> = {
  // worker/channels/wechat.ts APP_ID.
  wechat: { app_id: { pattern: /^wx[0-9a-f]{16}$/, hint: 'wx + 16 hex' } },
}

/**
 * Per channel, secret field → the setting it is of no use without: WeChat's safe mode decrypts a
 * push with the EncodingAESKey and checks the AppID inside it (worker/channels/wechat-verify.ts
 * answers `encryption_not_configured` without one).
 */
export const SETTING_NEEDED_BY: Partial<Record<ConnectionChannel, Record<string, string>>> = {
  wechat: { aes_key: 'app_id' },
}

/** Channels whose connection writes only for its ids: without one, every request is 503. */
export const NEEDS_IDS: ReadonlySet<ConnectionChannel> = new Set([
  'slack',
  'whatsapp-cloud',
  'messenger',
  'instagram',
])

/** A channel that writes only for its ids gets at least one. @throws naming `ids` */
export function needIds(channel: ConnectionChannel, ids: string[]): string[] {
  if (ids.length === 0 && NEEDS_IDS.has(channel)) {
    const kind: ConnectionKind = CONNECTION_KINDS[channel]
    throw invalid('ids', `at least one of the ${kind.ids?.noun}: without one it writes for none`)
  }
  return ids
}

/** A secret given without the setting it needs. @throws naming the setting */
export function needSettings(
  channel: ConnectionChannel,
  secrets: Record<string, unknown>,
  settings: Record<string, string>,
): void {
  for (const [field, setting] of Object.entries(SETTING_NEEDED_BY[channel] ?? {})) {
    if (secrets[field] && !settings[setting]) {
      throw invalid(`settings.${setting}`, `required with secrets.${field}`)
    }
  }
}
