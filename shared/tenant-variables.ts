/**
 * Which per-tenant variable holds what, per channel: the one table the Worker's connection
 * config (worker/connections/variables.ts, a connection laid over the env as these variables)
 * and the origin's import (origin/connections/import.ts, the variables read as connections) both
 * read, so the two directions cannot drift apart.
 * @module
 */

/** One channel's variables: secret field -> variable, the ids' and settings' variables. */
export interface TenantVariables {
  /** Secret field -> its `TENANT=v1|v2` variable. */
  readonly secrets: Readonly<Record<string, string>>
  /** The variable listing each tenant's ids (Slack workspaces, Meta numbers / pages / accounts). */
  readonly ids?: string
  /** Setting -> its `TENANT=value` variable (WeChat's AppID). */
  readonly settings?: Readonly<Record<string, string>>
  /** The channel's single-tenant variables (one secret for any tenant). */
  readonly single: readonly string[]
}

export const TENANT_VARIABLES = {
  slack: {
    secrets: { signing_secret: 'SLACK_SIGNING_SECRETS_BY_APP' },
    ids: 'SLACK_TEAMS_BY_APP',
    single: ['SLACK_SIGNING_SECRET'],
  },
  twilio: {
    secrets: { auth_token: 'TWILIO_AUTH_TOKENS_BY_ACCOUNT' },
    single: ['TWILIO_AUTH_TOKEN'],
  },
  telegram: {
    secrets: { secret_token: 'TELEGRAM_SECRET_TOKENS_BY_BOT' },
    single: ['TELEGRAM_SECRET_TOKEN', 'TELEGRAM_BOT_ID'],
  },
  'whatsapp-cloud': {
    secrets: { app_secret: 'WHATSAPP_APP_SECRETS_BY_APP' },
    ids: 'WHATSAPP_PHONE_NUMBERS_BY_APP',
    single: ['WHATSAPP_APP_SECRET'],
  },
  messenger: {
    secrets: { app_secret: 'MESSENGER_APP_SECRETS_BY_APP' },
    ids: 'MESSENGER_PAGES_BY_APP',
    single: ['MESSENGER_APP_SECRET'],
  },
  instagram: {
    secrets: { app_secret: 'INSTAGRAM_APP_SECRETS_BY_APP' },
    ids: 'INSTAGRAM_ACCOUNTS_BY_APP',
    single: ['INSTAGRAM_APP_SECRET'],
  },
  line: {
    secrets: { channel_secret: 'LINE_CHANNEL_SECRETS_BY_DESTINATION' },
    single: ['LINE_CHANNEL_SECRET'],
  },
  wechat: {
    secrets: { token: 'WECHAT_TOKENS_BY_ACCOUNT', aes_key: 'WECHAT_AES_KEYS_BY_ACCOUNT' },
    settings: { app_id: 'WECHAT_APP_IDS_BY_ACCOUNT' },
    single: [],
  },
} as const satisfies Record<string, TenantVariables>

export type TenantVariablesChannel = keyof typeof TENANT_VARIABLES

/** Every variable of a channel's tenants: what the Worker clears before laying one tenant's over. */
export function allVariables(t: TenantVariables): string[] {
  return [
    ...t.single,
    ...Object.values(t.secrets),
    ...(t.ids ? [t.ids] : []),
    ...Object.values(t.settings ?? {}),
  ]
}
