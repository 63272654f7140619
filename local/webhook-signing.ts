/**
 * What `send-webhook` signs with and builds on: the request it sends (or prints as curl), the
 * variables it reads, and who signs a request (a tenant's first secret from its per-tenant
 * variable, else the single-tenant one).
 * @module
 */
import { parseTenantSecrets } from '../worker/channels/tenant-secrets'

export interface Built {
  url: string
  headers: Record<string, string>
  body: string
  /** What must run while it is sent (Teams: the signing keys), and how to stop it. */
  serve?: () => Promise<() => Promise<void>>
}

export type Options = Record<string, string | boolean | undefined>

export const SECRET_NAMES = [
  'SLACK_SIGNING_SECRET',
  'TWILIO_AUTH_TOKEN',
  'TELEGRAM_SECRET_TOKEN',
  'TELEGRAM_BOT_ID',
  'SLACK_SIGNING_SECRETS_BY_APP',
  'SLACK_TEAMS_BY_APP',
  'TWILIO_AUTH_TOKENS_BY_ACCOUNT',
  'TELEGRAM_SECRET_TOKENS_BY_BOT',
  'WHATSAPP_APP_SECRET',
  'WHATSAPP_APP_SECRETS_BY_APP',
  'WHATSAPP_PHONE_NUMBERS_BY_APP',
  'LINE_CHANNEL_SECRET',
  'LINE_CHANNEL_SECRETS_BY_DESTINATION',
  'MESSENGER_APP_SECRET',
  'MESSENGER_APP_SECRETS_BY_APP',
  'MESSENGER_PAGES_BY_APP',
  'INSTAGRAM_APP_SECRET',
  'INSTAGRAM_APP_SECRETS_BY_APP',
  'INSTAGRAM_ACCOUNTS_BY_APP',
  'WECHAT_TOKENS_BY_ACCOUNT',
  'WECHAT_AES_KEYS_BY_ACCOUNT',
  'WECHAT_APP_IDS_BY_ACCOUNT',
  'TEAMS_APP_IDS',
  'TEAMS_OPENID_METADATA_URL',
  'PUBLIC_BASE_URL',
] as const

/** The first entry of a rotation list: the one vendors sign with today. */
function firstSecret(vars: Record<string, string>, name: string): string {
  const value = vars[name]?.split(',')[0]?.trim()
  if (!value) throw new Error(`${name} is not set (environment, .dev.vars or .dev.vars.example)`)
  return value
}

/**
 * Who signs, and with what: the tenant's first secret from the per-tenant variable when it is set
 * (the `--tenant` one, else its first tenant), else the single-tenant variable (tenant undefined).
 */
export function signer(
  vars: Record<string, string>,
  perTenant: string,
  shared: string,
  tenant: string | undefined,
): { tenant: string | undefined; secret: string } {
  const warnings: string[] = []
  const byTenant = parseTenantSecrets(
    perTenant,
    vars[perTenant],
    { test: () => true, hint: '' },
    warnings,
  )
  for (const warning of warnings) console.error(warning)
  if (byTenant === null || byTenant.size === 0) return { tenant, secret: firstSecret(vars, shared) }
  const chosen = tenant ?? [...byTenant.keys()][0]
  const secret = chosen === undefined ? undefined : byTenant.get(chosen)?.[0]
  if (chosen === undefined || secret === undefined) {
    throw new Error(`${perTenant} has no entry for tenant ${chosen}`)
  }
  return { tenant: chosen, secret }
}

/** The first workspace SLACK_TEAMS_BY_APP lists for `app` (the gateway refuses others), else T0LOCAL. */
export function slackTeamOf(vars: Record<string, string>, app: string | undefined): string {
  const any = { test: () => true, hint: '' }
  const teams = parseTenantSecrets('SLACK_TEAMS_BY_APP', vars.SLACK_TEAMS_BY_APP, any, [])
  return (app === undefined ? undefined : teams?.get(app)?.[0]) ?? 'T0LOCAL'
}

export const tenantOption = (o: Options) => (typeof o.tenant === 'string' ? o.tenant : undefined)

/** An option's value, when it was given. */
export const given = (o: Options, name: string) =>
  typeof o[name] === 'string' ? o[name] : undefined

/** The request, as what a curl command or a fetch sends. */
export async function built(request: Promise<Request>): Promise<Built> {
  const r = await request
  return { url: r.url, headers: Object.fromEntries(r.headers), body: await r.text() }
}
