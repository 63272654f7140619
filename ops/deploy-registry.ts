/**
 * The doctor's check of tenants named twice (`npm run doctor -- --check-network`): a tenant in
 * the Worker's per-tenant variables that the registry has a connection for too. Where both name a
 * tenant the registry wins (docs/connections.md): the connection's record verifies its requests,
 * the variables' entry no longer does, so the finding says which connection serves it and that
 * the variables' entry can go. The tenants are read from the variables with the import's own
 * reader (origin/connections/import.ts); the registry with the origin's DATABASE_URL. Accounts
 * and connection ids are no secrets; no secret is read from the registry.
 * @module
 */

import { readDatabaseSettings } from '../origin/config'
import { importPlan } from '../origin/connections/import'
import { openDatabase } from '../origin/db'
import { silentLogger } from '../origin/log'
import type { Finding } from './deploy-finding'

/** More findings than this become one line with the count. */
const MAX_LISTED = 50

/** `channel account` of every tenant the Worker's variables name (imported or not). */
export function variableTenants(secrets: Record<string, string>): string[] {
  const plan = importPlan(secrets)
  const named = [...plan.drafts, ...plan.refused].map((t) => `${t.channel} ${t.account}`)
  return [...new Set(named)]
}

interface RegistryRow {
  channel: string
  account: string
  id: string
  status: string
}

/** Tenants in both the variables and the registry; none when the registry cannot be read. */
export async function checkRegistryOverlap(
  env: Record<string, string | undefined>,
  secrets: Record<string, string>,
): Promise<Finding[]> {
  const tenants = variableTenants(secrets)
  const problems: string[] = []
  const settings = readDatabaseSettings(env, problems)
  // checkPostgres reports an unset or unreachable database; this check adds nothing then.
  if (tenants.length === 0 || problems.length > 0) return []
  const db = openDatabase(settings, 1, silentLogger)
  let rows: RegistryRow[]
  try {
    rows = await db.query<RegistryRow>(
      `SELECT channel, account, id, status FROM connections
        WHERE channel || ' ' || account = ANY($1::text[]) ORDER BY channel, account`,
      [tenants],
    )
  } catch {
    return []
  } finally {
    await db.close()
  }
  const findings: Finding[] = rows.slice(0, MAX_LISTED).map((row) => ({
    level: 'warn',
    what: `${row.channel} ${row.account} is in the Worker's variables and the registry: the registry's connection ${row.id} (${row.status}) serves it, the variables' entry does not`,
    fix: `remove ${row.account} from the Worker's ${row.channel} variables once the connection is seen at the edge (npm run connections -- show ${row.id})`,
  }))
  if (rows.length > MAX_LISTED) {
    findings.push({
      level: 'warn',
      what: `${rows.length - MAX_LISTED} more tenants are in both the variables and the registry`,
      fix: 'npm run connections -- import --dry-run lists each (already in the registry)',
    })
  }
  return findings
}
