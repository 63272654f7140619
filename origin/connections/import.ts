/**
 * `npm run connections -- import`: today's per-tenant variables (the Worker's `…_BY_…`,
 * TEAMS_APP_IDS, EMAIL_MAILBOX_ALIASES) read as connection drafts, with the parser the
 * Worker reads them with (shared/tenant-secrets.ts) and checked by the registry's model. One
 * tenant of a variable = one connection: its secrets (current first, as listed), its ids (Slack
 * workspaces, Meta numbers / pages / accounts, mail aliases), its settings (WeChat AppID).
 * API_KEYS gives each tenant an API connection holding its keys' hashes (import-api-keys.ts).
 * Problems name variables, entries and fields, never a secret.
 * @module
 */
import {
  CONNECTION_KINDS,
  type ConnectionChannel,
  type ConnectionKind,
} from '../../contract/connection'
import { EMAIL_MAILBOX_ALIASES, withoutSubaddress } from '../../email/mailbox'
import { secretList } from '../../shared/crypto'
import { parseTenantSecrets } from '../../shared/tenant-secrets'
import {
  TENANT_VARIABLES,
  type TenantVariables,
  type TenantVariablesChannel,
} from '../../shared/tenant-variables'
import { ConnectionError } from './errors'
import { apiKeysInputs } from './import-api-keys'
import { type ConnectionDraft, parseConnectionInput } from './model'

type Env = Record<string, string | undefined>

/** A channel's per-tenant variables (shared/tenant-variables.ts, the table the Worker reads too). */
interface Mapping extends TenantVariables {
  channel: ConnectionChannel
}

export const VARIABLE_MAPPINGS: readonly Mapping[] = Object.entries(TENANT_VARIABLES).map(
  ([channel, names]) => ({ ...names, channel: channel as TenantVariablesChannel }),
)

export interface ImportRefusal {
  channel: ConnectionChannel
  account: string
  field?: string
  reason: string
}

export interface ImportPlan {
  drafts: ConnectionDraft[]
  /** Tenants of the variables the registry's model refuses (the variable's own rules differ). */
  refused: ImportRefusal[]
  /** The parser's warnings, and what is not imported (a shared secret names no tenant). */
  warnings: string[]
}

/** Reads every known variable of `env` as drafts. */
export function importPlan(env: Env): ImportPlan {
  const plan: ImportPlan = { drafts: [], refused: [], warnings: [] }
  const inputs: { channel: ConnectionChannel; account: string; input: unknown }[] = []
  for (const mapping of VARIABLE_MAPPINGS) {
    for (const tenant of perTenant(env, mapping, plan.warnings)) {
      const missing = withoutIds(mapping, tenant)
      if (missing) plan.refused.push(missing)
      else inputs.push(tenant)
    }
  }
  inputs.push(...telegramPathless(env, inputs, plan.warnings))
  inputs.push(...teams(env), ...jsonGrouped(env, EMAIL_MAILBOX_ALIASES.name, plan.warnings))
  const api = apiKeysInputs(env.API_KEYS, plan.warnings)
  inputs.push(...api.inputs)
  plan.refused.push(...api.refused)
  for (const { channel, account, input } of inputs) {
    try {
      plan.drafts.push(parseConnectionInput(input))
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err
      plan.refused.push({ channel, account, field: err.field, reason: err.message })
    }
  }
  for (const shared of ['SLACK_SIGNING_SECRET', 'TWILIO_AUTH_TOKEN']) {
    if (secretList(env[shared]).length > 0) {
      plan.warnings.push(
        `${shared} serves any tenant and names none: not imported (give it per tenant)`,
      )
    }
  }
  return plan
}

/**
 * A Slack app or Meta app its ids' variable lists nothing for: the Worker serves it for no
 * workspace / page (503), and a connection without ids writes for none either. Not imported:
 * the refusal names the variable to set, the other tenants go on.
 */
function withoutIds(
  mapping: Mapping,
  tenant: { channel: ConnectionChannel; account: string; input: { ids?: string[] } },
): ImportRefusal | null {
  if (!mapping.ids || (tenant.input.ids?.length ?? 0) > 0) return null
  const kind: ConnectionKind = CONNECTION_KINDS[mapping.channel]
  const noun = kind.ids?.noun ?? 'ids'
  return {
    channel: tenant.channel,
    account: tenant.account,
    field: 'ids',
    reason: `ids: ${mapping.ids} lists no ${noun} for this app; not imported (set ${mapping.ids}=${tenant.account}=<id>|<id>, then import again)`,
  }
}

function perTenant(env: Env, mapping: Mapping, warnings: string[]) {
  const kind = CONNECTION_KINDS[mapping.channel]
  const rule = { test: (id: string) => kind.account.pattern.test(id), hint: kind.account.hint }
  const read = (name: string, noun?: string) =>
    parseTenantSecrets(name, env[name], rule, warnings, noun ? { noun } : {}) ?? new Map()
  const secrets = Object.entries(mapping.secrets).map(
    ([field, name]) => [field, read(name)] as const,
  )
  const ids = mapping.ids ? read(mapping.ids, 'id') : new Map<string, string[]>()
  const settings = Object.entries(mapping.settings ?? {}).map(
    ([key, name]) => [key, read(name, key)] as const,
  )
  const accounts = new Set(secrets.flatMap(([, byTenant]) => [...byTenant.keys()]))
  return [...accounts].map((account) => ({
    channel: mapping.channel,
    account,
    input: {
      channel: mapping.channel,
      account,
      ...(mapping.ids ? { ids: ids.get(account) ?? [] } : {}),
      settings: Object.fromEntries(
        settings.flatMap(([key, byTenant]) =>
          byTenant.has(account) ? [[key, byTenant.get(account)?.[0]]] : [],
        ),
      ),
      secrets: Object.fromEntries(
        secrets.flatMap(([field, byTenant]) =>
          byTenant.has(account) ? [[field, byTenant.get(account)]] : [],
        ),
      ),
    },
  }))
}

/** TELEGRAM_SECRET_TOKEN + TELEGRAM_BOT_ID: one more bot, unless TELEGRAM_SECRET_TOKENS_BY_BOT has it. */
function telegramPathless(
  env: Env,
  taken: readonly { channel: string; account: string }[],
  warnings: string[],
) {
  const tokens = secretList(env.TELEGRAM_SECRET_TOKEN)
  const bot = env.TELEGRAM_BOT_ID?.trim() ?? ''
  if (tokens.length === 0) return []
  if (!CONNECTION_KINDS.telegram.account.pattern.test(bot)) {
    warnings.push('TELEGRAM_SECRET_TOKEN without a valid TELEGRAM_BOT_ID: not imported')
    return []
  }
  if (taken.some((t) => t.channel === 'telegram' && t.account === bot)) return []
  const input = { channel: 'telegram', account: bot, secrets: { secret_token: tokens } }
  return [{ channel: 'telegram' as const, account: bot, input }]
}

function teams(env: Env) {
  const ids = (env.TEAMS_APP_IDS ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter(Boolean)
  return [...new Set(ids)].map((account) => ({
    channel: 'teams' as const,
    account,
    input: { channel: 'teams', account },
  }))
}

/**
 * EMAIL_MAILBOX_ALIASES (`alias -> mailbox`, JSON) grouped by mailbox: each mailbox a connection
 * whose ids are its aliases.
 */
function jsonGrouped(env: Env, name: string, warnings: string[]) {
  const channel = 'email' as const
  const raw = env[name]?.trim()
  if (!raw) return []
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch {
    warnings.push(`${name} is not JSON: not imported`)
    return []
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    warnings.push(`${name} is not a JSON object: not imported`)
    return []
  }
  const byTenant = new Map<string, string[]>()
  for (const [index, [id, tenant]] of Object.entries(parsed).entries()) {
    if (typeof tenant !== 'string') {
      warnings.push(`${name} entry ${index + 1} names no tenant; skipped`)
      continue
    }
    // As the Worker reads them (email/mailbox.ts): lower case, no +tag; a mailbox is no alias.
    const owner = withoutSubaddress(tenant) ?? tenant.toLowerCase()
    const alias = withoutSubaddress(id) ?? id.toLowerCase()
    if (alias !== owner) byTenant.set(owner, [...(byTenant.get(owner) ?? []), alias])
  }
  return [...byTenant].map(([account, ids]) => ({
    channel,
    account,
    input: { channel, account, ids },
  }))
}
