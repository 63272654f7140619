/**
 * The origin's settings, read from the environment once at start-up and validated as a whole: a
 * bad configuration stops the process with every problem listed and how to fix it. Messages name
 * variables, never their values (a URL or a secret list may hold credentials).
 * @module
 */
import { secretList } from '../contract/crypto'
import { isLogLevel, LOG_LEVELS, type LogLevel } from './log'

/** What every database pool of the origin's process is opened with (origin/db), the CLI's too. */
export interface DatabaseSettings {
  /** `DATABASE_URL`: the Postgres (Neon) connection string. */
  databaseUrl: string
  /**
   * `NEON_WS_PROXY`: `host:port/v2` of a local WebSocket-to-TCP proxy. Local use only; unset
   * against real Neon, whose endpoint the driver finds by itself.
   */
  neonWsProxy: string | undefined
  /**
   * `DB_QUERY_TIMEOUT_MS`: Postgres cancels any statement after this, in a transaction or not
   * (the relay's and the Gmail poller's too). @default 5000
   */
  dbQueryTimeoutMs: number
  /**
   * `DB_CONNECT_TIMEOUT_MS`: bound on opening (or waiting for) a pooled connection; must be below
   * `originTimeoutMs`. @default 1000, or half of `originTimeoutMs` if that is less
   */
  dbConnectTimeoutMs: number
  /**
   * `ORIGIN_TIMEOUT_MS`, the Worker's budget for one forward, read here (same variable, same
   * default) only to keep the pool wait below it. @default 2000
   */
  originTimeoutMs: number
}

export interface OriginConfig extends DatabaseSettings {
  /** `ORIGIN_PORT` @default 8788 (0 = any free port) */
  port: number
  /** `ORIGIN_HOST` @default '127.0.0.1' */
  host: string
  /** `ORIGIN_SHARED_SECRET`: comma-separated; every entry verifies (rotation). */
  sharedSecrets: string[]
  /** `DB_POOL_MAX`: connections per process. @default 10 */
  dbPoolMax: number
  /** `MAX_EVENT_BYTES`: larger bodies get 413 before they are read. @default 262144 */
  maxEventBytes: number
  /** `LOG_LEVEL` @default 'info' */
  logLevel: LogLevel
}

export type OriginEnv = Record<string, string | undefined>

export class ConfigError extends Error {
  readonly code = 'invalid_config'
  constructor(readonly problems: readonly string[]) {
    super(`invalid origin configuration:\n- ${problems.join('\n- ')}`)
    this.name = 'ConfigError'
  }
}

const DEFAULTS = {
  port: 8788,
  host: '127.0.0.1',
  dbPoolMax: 10,
  maxEventBytes: 256 * 1024,
  dbQueryTimeoutMs: 5000,
  dbConnectTimeoutMs: 1000,
  originTimeoutMs: 2000,
} as const

/** @throws {ConfigError} listing every problem found, not just the first. */
export function loadConfig(env: OriginEnv = process.env): OriginConfig {
  const problems: string[] = []
  const int = (name: string, fallback: number, min: number, max: number): number =>
    intSetting(env, problems, name, fallback, min, max)

  const database = readDatabaseSettings(env, problems)
  const sharedSecrets = secretList(env.ORIGIN_SHARED_SECRET)
  if (sharedSecrets.length === 0) {
    problems.push(
      'ORIGIN_SHARED_SECRET is not set: give the secret the worker signs with (comma-separated to rotate; .dev.vars.example has a dev value)',
    )
  }

  const logLevel = env.LOG_LEVEL?.trim() || 'info'
  if (!isLogLevel(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)

  const config: OriginConfig = {
    ...database,
    port: int('ORIGIN_PORT', DEFAULTS.port, 0, 65535),
    host: env.ORIGIN_HOST?.trim() || DEFAULTS.host,
    sharedSecrets,
    dbPoolMax: int('DB_POOL_MAX', DEFAULTS.dbPoolMax, 1, 1000),
    maxEventBytes: int('MAX_EVENT_BYTES', DEFAULTS.maxEventBytes, 1024, 16 * 1024 * 1024),
    logLevel: isLogLevel(logLevel) ? logLevel : 'info',
  }
  if (config.dbConnectTimeoutMs >= config.originTimeoutMs) {
    problems.push(
      `DB_CONNECT_TIMEOUT_MS (${config.dbConnectTimeoutMs}) must be below ORIGIN_TIMEOUT_MS (${config.originTimeoutMs}): the Worker gives up on a forward after ORIGIN_TIMEOUT_MS, so a longer wait for a connection only does work nobody waits for`,
    )
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

/**
 * DATABASE_URL, NEON_WS_PROXY and the database waits, as every pool of the origin's process reads
 * them (the failures CLI's too); records each problem. The check that the pool wait stays below
 * the forward budget is the serving origin's own (loadConfig): the CLI serves no forward.
 */
export function readDatabaseSettings(env: OriginEnv, problems: string[]): DatabaseSettings {
  const int = (name: string, fallback: number, min: number, max: number): number =>
    intSetting(env, problems, name, fallback, min, max)
  const databaseUrl = env.DATABASE_URL?.trim() ?? ''
  if (!databaseUrl) {
    problems.push(
      'DATABASE_URL is not set: give the Postgres connection string, e.g. postgres://postgres@127.0.0.1:5432/inbound_dedup',
    )
  } else if (!isPostgresUrl(databaseUrl)) {
    problems.push('DATABASE_URL is not a postgres:// or postgresql:// URL')
  }

  const neonWsProxy = env.NEON_WS_PROXY?.trim() || undefined
  if (neonWsProxy && /^[a-z]+:\/\//i.test(neonWsProxy)) {
    problems.push(
      'NEON_WS_PROXY is host:port/path without a scheme, e.g. 127.0.0.1:4444/v2 (the wsProxy of local/neon-ws-proxy.ts)',
    )
  }

  const originTimeoutMs = int('ORIGIN_TIMEOUT_MS', DEFAULTS.originTimeoutMs, 100, 60_000)
  // Unset, the pool wait follows a shorter forward budget instead of refusing to start.
  const defaultPoolWait = Math.min(DEFAULTS.dbConnectTimeoutMs, Math.floor(originTimeoutMs / 2))
  return {
    databaseUrl,
    neonWsProxy,
    dbQueryTimeoutMs: int('DB_QUERY_TIMEOUT_MS', DEFAULTS.dbQueryTimeoutMs, 100, 600_000),
    dbConnectTimeoutMs: int('DB_CONNECT_TIMEOUT_MS', defaultPoolWait, 100, 600_000),
    originTimeoutMs,
  }
}

/** Reads an integer setting within bounds; records a problem (name, range, default) if it is not. */
export function intSetting(
  env: OriginEnv,
  problems: string[],
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = env[name]?.trim()
  if (!raw) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    problems.push(`${name} must be an integer from ${min} to ${max} (default ${fallback})`)
    return fallback
  }
  return value
}

export function isPostgresUrl(value: string): boolean {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(value).protocol)
  } catch {
    return false
  }
}
