/**
 * The deployment checks that need the network (`npm run doctor -- --check-network`): Postgres
 * answers and has every migration of migrations/ applied, the Upstash REST endpoint answers with
 * the token. Each wait is bounded; a finding names the service, never its URL's credentials.
 * @module
 */
import { UPSTASH_TOKEN, UPSTASH_URL } from '../claims/settings'
import { readDatabaseSettings } from '../origin/config'
import { openDatabase } from '../origin/db'
import { silentLogger } from '../origin/log'
import type { Finding } from './deploy-finding'
import { migrationVersions } from './migrate'

const REDIS_TIMEOUT_MS = 5_000

/**
 * Postgres as the origin reaches it (DATABASE_URL, DATABASE_DRIVER, NEON_WS_PROXY and the
 * DB_* waits of `env`, origin/config.ts), and dbmate's schema_migrations against migrations/.
 */
export async function checkPostgres(env: Record<string, string | undefined>): Promise<Finding[]> {
  const problems: string[] = []
  const settings = readDatabaseSettings(env, problems)
  if (problems.length > 0) {
    return problems.map((problem) => ({
      level: 'error',
      what: `Postgres: ${problem}`,
      fix: "set the origin's DATABASE_URL in the doctor's environment",
    }))
  }
  const db = openDatabase(settings, 1, silentLogger)
  try {
    let applied: Set<string>
    try {
      const rows = await db.query<{ version: string }>('SELECT version FROM schema_migrations')
      applied = new Set(rows.map((row) => row.version))
    } catch (err) {
      const missingTable = (err as { code?: string }).code === '42P01'
      return [
        missingTable
          ? {
              level: 'error',
              what: `Postgres (${settings.databaseDriver}) answers but has no migrations applied`,
              fix: 'DATABASE_URL=... npm run migrate (or the image\'s "migrate" command)',
            }
          : {
              level: 'error',
              what: `Postgres (${settings.databaseDriver}) does not answer: ${(err as Error).message}`,
              fix: 'check DATABASE_URL, the network path and, for pg, DATABASE_DRIVER',
            },
      ]
    }
    const missing = migrationVersions().filter((version) => !applied.has(version))
    if (missing.length > 0) {
      return [
        {
          level: 'error',
          what: `Postgres: ${missing.length} migrations not applied (${missing.join(', ')})`,
          fix: 'DATABASE_URL=... npm run migrate',
        },
      ]
    }
    return [
      {
        level: 'ok',
        what: `Postgres (${settings.databaseDriver}) answers and is migrated`,
        fix: '',
      },
    ]
  } finally {
    await db.close()
  }
}

/** The Worker's Upstash REST endpoint answers PING with the token. */
export async function checkRedis(secrets: Record<string, string>): Promise<Finding[]> {
  const url = secrets[UPSTASH_URL.name]?.trim()
  const token = secrets[UPSTASH_TOKEN.name]?.trim()
  if (!url || !token) return []
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(['PING']),
      signal: AbortSignal.timeout(REDIS_TIMEOUT_MS),
    })
    const body = (await response.json().catch(() => ({}))) as { result?: unknown }
    if (response.ok && body.result === 'PONG') {
      return [{ level: 'ok', what: 'Redis (Upstash REST) answers PING', fix: '' }]
    }
    return [
      {
        level: 'error',
        what: `Redis (Upstash REST) answered ${response.status} to PING`,
        fix: `check ${UPSTASH_URL.name} and ${UPSTASH_TOKEN.name} (401: the token)`,
      },
    ]
  } catch (err) {
    return [
      {
        level: 'error',
        what: `Redis (Upstash REST) does not answer: ${(err as Error).name}`,
        fix: `check ${UPSTASH_URL.name} and the network path`,
      },
    ]
  }
}
