/**
 * Per-tenant vendor secrets: which secrets may verify a request for which tenant (Slack app,
 * Twilio account, Telegram bot), so that one tenant's secret can never vouch for another tenant.
 *
 * Format of a per-tenant variable (one `wrangler secret put` value):
 * `TENANT=secret1|secret2,OTHER=secret3`: tenants separated by `,`, each tenant's rotation list by
 * `|` (every entry verifies). Secrets may contain `=` but not `,` or `|` (vendor secrets are hex
 * or `[A-Za-z0-9_-]`). Warnings name the variable, the entry's position and, when it is valid, the
 * tenant id: never a secret (a malformed entry may be a secret pasted in the wrong place). The
 * parser itself is in shared/tenant-secrets.ts: the origin's import of these variables into the
 * connection registry reads them with it too.
 * @module
 */
import { secretList } from '../../shared/crypto'
import { rawValue, type StringEnv, setting, type TextSetting } from '../../shared/settings'
import { parseTenantSecrets, type TenantIdRule } from '../../shared/tenant-secrets'
import type { ChannelConfig, TenantVerdict, Verdict } from './types'

export type TenantSecrets =
  /** A single-tenant variable (SLACK_SIGNING_SECRET, TWILIO_AUTH_TOKEN): any tenant, one list. */
  | { kind: 'shared'; secrets: readonly string[] }
  /** A per-tenant variable: a tenant not listed is refused. */
  | { kind: 'per-tenant'; byTenant: ReadonlyMap<string, readonly string[]> }

/**
 * Verifies with the secrets of `tenant` only (an id read from the untrusted request before
 * verification: it picks the secrets, it proves nothing until they match).
 */
export async function verifyForTenant(
  config: TenantSecrets,
  tenant: string | null,
  verify: (secrets: readonly string[]) => Promise<Verdict>,
): Promise<TenantVerdict> {
  if (config.kind === 'shared') {
    const verdict = await verify(config.secrets)
    return verdict.ok ? { ...verdict, tenant: null } : verdict
  }
  const secrets = tenant === null ? undefined : config.byTenant.get(tenant)
  if (tenant === null || !secrets) return { ok: false, reason: 'unknown_tenant' }
  const verdict = await verify(secrets)
  return verdict.ok ? { ...verdict, tenant } : verdict
}

/**
 * Whose secrets a signature matches, for a request that names its tenant only inside the signed
 * body (Meta's apps, LINE's channels: nothing is read before it is verified). Every tenant's
 * secrets are tried, all of them (`matches` compares in constant time), so the time says nothing
 * of which one matched; the first tenant listed that matches is the one. Undefined: no secret
 * matched; null: the shared secrets did.
 */
export async function matchingTenant(
  config: TenantSecrets,
  matches: (secrets: readonly string[]) => Promise<boolean>,
): Promise<string | null | undefined> {
  const byTenant = config.kind === 'shared' ? [[null, config.secrets] as const] : config.byTenant
  let tenant: string | null | undefined
  for (const [id, secrets] of byTenant) {
    if ((await matches(secrets)) && tenant === undefined) tenant = id
  }
  return tenant
}

/** Every configured secret of every tenant (only for requests that name no tenant and write nothing). */
export function allSecrets(config: TenantSecrets): string[] {
  return config.kind === 'shared' ? [...config.secrets] : [...config.byTenant.values()].flat()
}

export {
  parseTenantSecrets,
  type TenantIdRule,
  type TenantValues,
  tenantIds,
} from '../../shared/tenant-secrets'

/** Where a channel's tenant secrets are set: a per-tenant variable, or a shared one. */
export interface TenantVariables {
  perTenant: TextSetting
  shared: TextSetting
  /** What a tenant id of `perTenant` must look like. */
  rule: TenantIdRule
}

/** A per-tenant secret variable's row (`TENANT=secret1|secret2,OTHER=...`). */
export const tenantSecretsRow = <const N extends string>(name: N, doc: string) =>
  setting({ name, kind: 'tenant-secrets', secret: true, doc })

/** A shared secret variable's row (a comma-separated rotation list). */
export const sharedSecretRow = <const N extends string>(name: N, doc: string) =>
  setting({ name, kind: 'secret-list', secret: true, doc })

/**
 * Slack / Twilio secrets: the per-tenant variable when set (the shared one is then ignored, so
 * it cannot vouch for a tenant the map does not list), else the shared variable (any tenant, as a
 * single-tenant deployment always worked). A per-tenant variable without one valid entry disables
 * the channel rather than fall back to the shared list.
 */
export function tenantSecrets(
  env: StringEnv,
  variables: TenantVariables,
  warnings: string[],
): ChannelConfig<TenantSecrets> {
  const perTenant = variables.perTenant.name
  const shared = variables.shared.name
  const byTenant = parseTenantSecrets(perTenant, rawValue(env, perTenant), variables.rule, warnings)
  const sharedSecrets = secretList(rawValue(env, shared))
  if (byTenant !== null) {
    if (sharedSecrets.length > 0) warnings.push(`${shared} is ignored while ${perTenant} is set`)
    return byTenant.size > 0
      ? { ok: true, value: { kind: 'per-tenant', byTenant } }
      : { ok: false, missing: [perTenant] }
  }
  return sharedSecrets.length > 0
    ? { ok: true, value: { kind: 'shared', secrets: sharedSecrets } }
    : { ok: false, missing: [`${shared} (or ${perTenant})`] }
}
