/**
 * The parser of per-tenant variables (`TENANT=secret1|secret2,OTHER=secret3`): the Worker's
 * channels read their tenants with it (worker/channels/tenant-secrets.ts), and the origin's
 * `npm run connections -- import` reads the same variables into the registry with it, so the two
 * cannot read one value two ways. Warnings name the variable, the entry's position and, when it
 * is valid, the tenant id: never a secret.
 * @module
 */

export interface TenantIdRule {
  test: (id: string) => boolean
  /** What a valid id looks like, for the warning. */
  hint: string
}

/** The values a per-tenant variable lists for each tenant. */
export interface TenantValues {
  /** What each value is, in the warnings. @default 'secret' */
  noun?: string
  /** Whether the vendor would accept a value (a warning when not). @default any */
  isValid?: (value: string) => boolean
}

/**
 * Parses a per-tenant variable. Null when unset or blank; otherwise the valid entries (possibly
 * none), each problem a warning.
 */
export function parseTenantSecrets(
  name: string,
  raw: string | undefined,
  rule: TenantIdRule,
  warnings: string[],
  values: TenantValues = {},
): Map<string, string[]> | null {
  const { noun = 'secret', isValid = () => true } = values
  if (raw === undefined || raw.trim() === '') return null
  const byTenant = new Map<string, string[]>()
  const entries = raw.split(',').map((entry) => entry.trim())
  entries.forEach((entry, index) => {
    if (entry === '') return
    const where = `${name} entry ${index + 1}`
    const equals = entry.indexOf('=')
    const id = equals < 0 ? '' : entry.slice(0, equals).trim()
    if (equals < 0 || !rule.test(id)) {
      warnings.push(`${where} is not TENANT=${noun}1|${noun}2 with TENANT ${rule.hint}; skipped`)
      return
    }
    const secrets = entry
      .slice(equals + 1)
      .split('|')
      .map((secret) => secret.trim())
      .filter((secret) => secret !== '')
    if (secrets.length === 0) {
      warnings.push(`${where} (${id}) has no ${noun}; skipped`)
    } else if (byTenant.has(id)) {
      warnings.push(`${where}: ${id} is listed twice; the first entry is used`)
    } else {
      if (!secrets.every(isValid)) {
        warnings.push(`${where} (${id}) has a ${noun} the vendor would not accept`)
      }
      byTenant.set(id, secrets)
    }
  })
  if (byTenant.size === 0) warnings.push(`${name} has no valid entry: the channel is disabled`)
  return byTenant
}

/**
 * A per-tenant list of the ids each tenant writes for (`APP=id1|id2,OTHER=id3`: a WhatsApp app's
 * phone numbers, a Slack app's workspaces), parsed like the secrets. Null when unset; each of
 * `tenants` the variable does not list is warned about: it writes for none.
 */
export function tenantIds(
  name: string,
  raw: string | undefined,
  tenants: readonly string[],
  rule: TenantIdRule,
  values: Required<TenantValues>,
  warnings: string[],
): Map<string, ReadonlySet<string>> | null {
  const byTenant = parseTenantSecrets(name, raw, rule, warnings, values)
  if (byTenant === null) return null
  const unlisted = tenants.filter((tenant) => !byTenant.has(tenant))
  if (byTenant.size > 0 && unlisted.length > 0) {
    warnings.push(`${name} lists no ${values.noun} of ${unlisted}`)
  }
  return new Map([...byTenant].map(([tenant, ids]) => [tenant, new Set(ids)]))
}
