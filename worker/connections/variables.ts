/**
 * A connection as the per-tenant variables of today would hold it: one tenant's entry in
 * SLACK_SIGNING_SECRETS_BY_APP + SLACK_TEAMS_BY_APP, TWILIO_AUTH_TOKENS_BY_ACCOUNT, WECHAT_*_BY_ACCOUNT
 * and so on. config.ts lays these over the Worker's env with the channel's tenant variables
 * cleared and calls the channel's own `settings`, so the channel's own verifier runs unchanged,
 * with this one tenant's secrets and ids only (the same mapping, run backwards, is the import).
 * @module
 */
import type { ConnectionChannel, EdgeConnection } from '../../contract/connection'

/** The live secrets of a field, the current one first. */
export type SecretsOf = (field: string) => readonly string[]

export interface ChannelMapping {
  /** The channel's tenant variables: cleared, so no other tenant's secret is in the config. */
  readonly clears: readonly string[]
  /** This connection's values of those variables. */
  variables(record: EdgeConnection, secrets: SecretsOf): Record<string, string>
  /** The route parameters the channel's verifier reads (WeChat's `:account`). */
  params?(record: EdgeConnection): Record<string, string>
}

/** `TENANT=v1|v2`: one entry of a per-tenant variable. */
const entry = (tenant: string, values: readonly string[]) => `${tenant}=${values.join('|')}`

/** A Meta channel's mapping (its variables named by prefix and the ids' variable). */
function metaMapping(prefix: string, idsName: string): ChannelMapping {
  return {
    clears: [`${prefix}_APP_SECRET`, `${prefix}_APP_SECRETS_BY_APP`, idsName],
    variables: (record, secrets) => ({
      [`${prefix}_APP_SECRETS_BY_APP`]: entry(record.account, secrets('app_secret')),
      [idsName]: entry(record.account, record.ids),
    }),
  }
}

export const CHANNEL_MAPPINGS: Partial<Record<ConnectionChannel, ChannelMapping>> = {
  slack: {
    clears: ['SLACK_SIGNING_SECRET', 'SLACK_SIGNING_SECRETS_BY_APP', 'SLACK_TEAMS_BY_APP'],
    // The workspaces are always set: an app without them writes for none (503), never for any.
    variables: (record, secrets) => ({
      SLACK_SIGNING_SECRETS_BY_APP: entry(record.account, secrets('signing_secret')),
      SLACK_TEAMS_BY_APP: entry(record.account, record.ids),
    }),
  },
  twilio: {
    clears: ['TWILIO_AUTH_TOKEN', 'TWILIO_AUTH_TOKENS_BY_ACCOUNT'],
    variables: (record, secrets) => ({
      TWILIO_AUTH_TOKENS_BY_ACCOUNT: entry(record.account, secrets('auth_token')),
    }),
  },
  // The bot of the bare path (TELEGRAM_BOT_ID): the connection route names no bot in its path.
  telegram: {
    clears: ['TELEGRAM_SECRET_TOKEN', 'TELEGRAM_BOT_ID', 'TELEGRAM_SECRET_TOKENS_BY_BOT'],
    variables: (record, secrets) => ({
      TELEGRAM_SECRET_TOKEN: secrets('secret_token').join(','),
      TELEGRAM_BOT_ID: record.account,
    }),
  },
  'whatsapp-cloud': metaMapping('WHATSAPP', 'WHATSAPP_PHONE_NUMBERS_BY_APP'),
  messenger: metaMapping('MESSENGER', 'MESSENGER_PAGES_BY_APP'),
  instagram: metaMapping('INSTAGRAM', 'INSTAGRAM_ACCOUNTS_BY_APP'),
  line: {
    clears: ['LINE_CHANNEL_SECRET', 'LINE_CHANNEL_SECRETS_BY_DESTINATION'],
    variables: (record, secrets) => ({
      LINE_CHANNEL_SECRETS_BY_DESTINATION: entry(record.account, secrets('channel_secret')),
    }),
  },
  wechat: {
    clears: ['WECHAT_TOKENS_BY_ACCOUNT', 'WECHAT_AES_KEYS_BY_ACCOUNT', 'WECHAT_APP_IDS_BY_ACCOUNT'],
    variables: (record, secrets) => {
      const aesKeys = secrets('aes_key')
      const appId = record.settings.app_id
      return {
        WECHAT_TOKENS_BY_ACCOUNT: entry(record.account, secrets('token')),
        ...(aesKeys.length > 0
          ? { WECHAT_AES_KEYS_BY_ACCOUNT: entry(record.account, aesKeys) }
          : {}),
        ...(appId ? { WECHAT_APP_IDS_BY_ACCOUNT: entry(record.account, [appId]) } : {}),
      }
    },
    params: (record) => ({ account: record.account }),
  },
  teams: {
    clears: ['TEAMS_APP_IDS'],
    variables: (record) => ({ TEAMS_APP_IDS: record.account }),
  },
}

/**
 * Whether a value can stand in a per-tenant variable unchanged: no list separator, no space at
 * its ends (the parsers trim). A value that cannot is refused, never cut into two secrets.
 */
export function fitsVariable(value: string): boolean {
  return value !== '' && !/[,|]/.test(value) && value.trim() === value
}
