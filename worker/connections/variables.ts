/**
 * A connection as the per-tenant variables of today would hold it: one tenant's entry in
 * SLACK_SIGNING_SECRETS_BY_APP + SLACK_TEAMS_BY_APP, TWILIO_AUTH_TOKENS_BY_ACCOUNT, WECHAT_*_BY_ACCOUNT
 * and so on. config.ts lays these over the Worker's env with the channel's tenant variables
 * cleared and calls the channel's own `settings`, so the channel's own verifier runs unchanged,
 * with this one tenant's secrets and ids only (the same mapping, run backwards, is the import).
 * @module
 */
import type { ConnectionChannel, EdgeConnection } from '../../contract/connection'
import { allVariables, TENANT_VARIABLES as T } from '../../shared/tenant-variables'

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

/** A Meta channel's mapping (shared/tenant-variables.ts names its variables). */
function metaMapping(
  names: (typeof T)['whatsapp-cloud' | 'messenger' | 'instagram'],
): ChannelMapping {
  return {
    clears: allVariables(names),
    variables: (record, secrets) => ({
      [names.secrets.app_secret]: entry(record.account, secrets('app_secret')),
      [names.ids]: entry(record.account, record.ids),
    }),
  }
}

export const CHANNEL_MAPPINGS: Partial<Record<ConnectionChannel, ChannelMapping>> = {
  slack: {
    clears: allVariables(T.slack),
    // The workspaces are always set: an app without them writes for none (503), never for any.
    variables: (record, secrets) => ({
      [T.slack.secrets.signing_secret]: entry(record.account, secrets('signing_secret')),
      [T.slack.ids]: entry(record.account, record.ids),
    }),
  },
  twilio: {
    clears: allVariables(T.twilio),
    variables: (record, secrets) => ({
      [T.twilio.secrets.auth_token]: entry(record.account, secrets('auth_token')),
    }),
  },
  // The bot of the bare path (TELEGRAM_BOT_ID): the connection route names no bot in its path.
  telegram: {
    clears: allVariables(T.telegram),
    variables: (record, secrets) => ({
      TELEGRAM_SECRET_TOKEN: secrets('secret_token').join(','),
      TELEGRAM_BOT_ID: record.account,
    }),
  },
  'whatsapp-cloud': metaMapping(T['whatsapp-cloud']),
  messenger: metaMapping(T.messenger),
  instagram: metaMapping(T.instagram),
  line: {
    clears: allVariables(T.line),
    variables: (record, secrets) => ({
      [T.line.secrets.channel_secret]: entry(record.account, secrets('channel_secret')),
    }),
  },
  wechat: {
    clears: allVariables(T.wechat),
    variables: (record, secrets) => {
      const aesKeys = secrets('aes_key')
      const appId = record.settings.app_id
      const names = T.wechat
      return {
        [names.secrets.token]: entry(record.account, secrets('token')),
        ...(aesKeys.length > 0 ? { [names.secrets.aes_key]: entry(record.account, aesKeys) } : {}),
        ...(appId ? { [names.settings.app_id]: entry(record.account, [appId]) } : {}),
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
