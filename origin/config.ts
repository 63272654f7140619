/**
 * The origin's settings, read from the environment once at start-up and validated as a whole: a
 * bad configuration stops the process with every problem listed and how to fix it. Messages name
 * variables, never their values (a URL or a secret list may hold credentials). The rows below are
 * the serving origin's part of the origin's settings table (origin/settings.ts).
 * @module
 */
import { ORIGIN_TIMEOUT_MS } from '../claims/settings'
import { LIMITS } from '../contract/event'
import { ORIGIN_SHARED_SECRET } from '../contract/forward-signature'
import { secretList } from '../shared/crypto'
import { OPERATOR_TOKEN, operatorTokenProblem } from '../shared/operator-token'
import { readInt, readText, readUrl, setting } from '../shared/settings'
import { DATABASE_DRIVERS, type DatabaseDriver, driverForUrl, isDatabaseDriver } from './db/driver'
import { isLogLevel, LOG_LEVELS, type LogLevel } from './log'

/** What every database pool of the origin's process is opened with (origin/db), the CLI's too. */
export interface DatabaseSettings {
  /** `DATABASE_URL`: the Postgres connection string (Neon or any Postgres 15+). */
  databaseUrl: string
  /**
   * `DATABASE_DRIVER`: `neon` (WebSockets) or `pg` (TCP). @default `neon` for a `*.neon.tech` host
   * or when NEON_WS_PROXY is set, else `pg`
   */
  databaseDriver: DatabaseDriver
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
  /** `OPERATOR_TOKEN`: bearer token for `GET /metrics`; unset, that route answers 404. */
  operatorToken: string | undefined
  /**
   * `GATEWAY_URL`: the Worker's URL, where the HTTP replay of an unrecognized event classifies it
   * again (origin/failures/unrecognized.ts). Unset: such a replay is refused, saying so.
   */
  gatewayUrl: string | null
}

export type OriginEnv = Record<string, string | undefined>

export class ConfigError extends Error {
  readonly code = 'invalid_config'
  constructor(readonly problems: readonly string[]) {
    super(`invalid origin configuration:\n- ${problems.join('\n- ')}`)
    this.name = 'ConfigError'
  }
}

export const DATABASE_URL = setting({
  name: 'DATABASE_URL',
  kind: 'string',
  secret: true,
  doc: 'the Postgres connection string (Neon, or any Postgres 15+)',
})
export const DATABASE_DRIVER = setting({
  name: 'DATABASE_DRIVER',
  kind: 'string',
  secret: false,
  doc: 'neon (WebSockets) or pg (TCP); unset: neon for a *.neon.tech host or with NEON_WS_PROXY, else pg',
})
export const NEON_WS_PROXY = setting({
  name: 'NEON_WS_PROXY',
  kind: 'string',
  secret: false,
  doc: 'local only: host:port/v2 of the WebSocket-to-TCP proxy',
})
export const ORIGIN_PORT = setting({
  name: 'ORIGIN_PORT',
  kind: 'int',
  secret: false,
  default: 8788,
  min: 0,
  max: 65535,
  doc: 'listen port (0 = any free port)',
})
export const ORIGIN_HOST = setting({
  name: 'ORIGIN_HOST',
  kind: 'string',
  secret: false,
  default: '127.0.0.1',
  doc: 'listen address',
})
export const DB_POOL_MAX = setting({
  name: 'DB_POOL_MAX',
  kind: 'int',
  secret: false,
  default: 10,
  min: 1,
  max: 1000,
  doc: 'connections per process',
})
export const DB_QUERY_TIMEOUT_MS = setting({
  name: 'DB_QUERY_TIMEOUT_MS',
  kind: 'int',
  secret: false,
  default: 5000,
  min: 100,
  max: 600_000,
  doc: 'Postgres cancels any statement after this',
})
export const DB_CONNECT_TIMEOUT_MS = setting({
  name: 'DB_CONNECT_TIMEOUT_MS',
  kind: 'int',
  secret: false,
  default: 1000,
  min: 100,
  max: 600_000,
  doc: 'bound on a pooled connection; default: this, or half of ORIGIN_TIMEOUT_MS if less',
})
/**
 * What a dead-letter report adds to the largest event (its key, error, attempts): the room
 * between LIMITS.eventBytes and the smallest MAX_EVENT_BYTES.
 */
export const DEAD_REPORT_HEADROOM_BYTES = 16 * 1024
/**
 * At least the largest event the Worker accepts plus its dead-letter report's headroom: below it,
 * an event the vendor was told was taken would get 413 here, and so would its dead letter.
 */
export const MAX_EVENT_BYTES = setting({
  name: 'MAX_EVENT_BYTES',
  kind: 'int',
  secret: false,
  default: 256 * 1024,
  min: LIMITS.eventBytes + DEAD_REPORT_HEADROOM_BYTES,
  max: 16 * 1024 * 1024,
  doc: 'larger bodies get 413 before they are read',
})
export const LOG_LEVEL = setting({
  name: 'LOG_LEVEL',
  kind: 'string',
  secret: false,
  default: 'info',
  doc: LOG_LEVELS.join(', '),
})

export const GATEWAY_URL = setting({
  name: 'GATEWAY_URL',
  kind: 'url',
  secret: false,
  doc: "the Worker's public URL: a replay of an unrecognized event is classified again there",
})

/** The serving origin's own rows (origin/settings.ts adds Gmail's, the relay's, the claims'). */
export const CORE_SETTINGS = [
  DATABASE_URL,
  DATABASE_DRIVER,
  NEON_WS_PROXY,
  ORIGIN_SHARED_SECRET,
  ORIGIN_PORT,
  ORIGIN_HOST,
  DB_POOL_MAX,
  DB_QUERY_TIMEOUT_MS,
  DB_CONNECT_TIMEOUT_MS,
  ORIGIN_TIMEOUT_MS,
  MAX_EVENT_BYTES,
  LOG_LEVEL,
  OPERATOR_TOKEN,
  GATEWAY_URL,
] as const

/** MAX_EVENT_BYTES; one below its floor is refused with the reason, not just the range. */
function readMaxEventBytes(env: OriginEnv, problems: string[]): number {
  const value = Number(env[MAX_EVENT_BYTES.name]?.trim() || Number.NaN)
  if (Number.isInteger(value) && value < MAX_EVENT_BYTES.min) {
    problems.push(
      `MAX_EVENT_BYTES (${value}) is below ${MAX_EVENT_BYTES.min}: the largest event the Worker accepts (${LIMITS.eventBytes} bytes as JSON) and its dead-letter report (up to ${DEAD_REPORT_HEADROOM_BYTES} bytes more) would get 413, so an event a vendor was told was taken could be neither stored nor recorded`,
    )
    return MAX_EVENT_BYTES.default
  }
  return readInt(env, MAX_EVENT_BYTES, problems)
}

/** @throws {ConfigError} listing every problem found, not just the first. */
export function loadConfig(env: OriginEnv = process.env): OriginConfig {
  const problems: string[] = []
  const database = readDatabaseSettings(env, problems)
  const sharedSecrets = secretList(env[ORIGIN_SHARED_SECRET.name])
  if (sharedSecrets.length === 0) {
    problems.push(
      'ORIGIN_SHARED_SECRET is not set: give the secret the worker signs with (comma-separated to rotate; .dev.vars.example has a dev value)',
    )
  }

  const logLevel = readText(env, LOG_LEVEL) ?? LOG_LEVEL.default
  if (!isLogLevel(logLevel)) problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`)

  const config: OriginConfig = {
    ...database,
    port: readInt(env, ORIGIN_PORT, problems),
    host: readText(env, ORIGIN_HOST) ?? ORIGIN_HOST.default,
    sharedSecrets,
    dbPoolMax: readInt(env, DB_POOL_MAX, problems),
    maxEventBytes: readMaxEventBytes(env, problems),
    logLevel: isLogLevel(logLevel) ? logLevel : 'info',
    operatorToken: readText(env, OPERATOR_TOKEN) ?? undefined,
    gatewayUrl: readUrl(env, GATEWAY_URL, problems),
  }
  const tokenProblem = operatorTokenProblem(config.operatorToken)
  if (tokenProblem) problems.push(tokenProblem)
  if (config.dbConnectTimeoutMs >= config.originTimeoutMs) {
    problems.push(
      `DB_CONNECT_TIMEOUT_MS (${config.dbConnectTimeoutMs}) must be below ORIGIN_TIMEOUT_MS (${config.originTimeoutMs}): the Worker gives up on a forward after ORIGIN_TIMEOUT_MS, so a longer wait for a connection only does work nobody waits for`,
    )
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

/**
 * DATABASE_URL, DATABASE_DRIVER, NEON_WS_PROXY and the database waits, as every pool of the origin's process reads
 * them (the failures CLI's too); records each problem. The check that the pool wait stays below
 * the forward budget is the serving origin's own (loadConfig): the CLI serves no forward.
 */
export function readDatabaseSettings(env: OriginEnv, problems: string[]): DatabaseSettings {
  const databaseUrl = readText(env, DATABASE_URL) ?? ''
  if (!databaseUrl) {
    problems.push(
      'DATABASE_URL is not set: give the Postgres connection string, e.g. postgres://postgres@127.0.0.1:5432/inbound_dedup',
    )
  } else if (!isPostgresUrl(databaseUrl)) {
    problems.push('DATABASE_URL is not a postgres:// or postgresql:// URL')
  }

  const neonWsProxy = readText(env, NEON_WS_PROXY) ?? undefined
  if (neonWsProxy && /^[a-z]+:\/\//i.test(neonWsProxy)) {
    problems.push(
      'NEON_WS_PROXY is host:port/path without a scheme, e.g. 127.0.0.1:4444/v2 (the wsProxy of local/neon-ws-proxy.ts)',
    )
  }

  const driverName = readText(env, DATABASE_DRIVER)
  if (driverName && !isDatabaseDriver(driverName)) {
    problems.push(
      `DATABASE_DRIVER must be ${DATABASE_DRIVERS.join(' or ')} (neon: Neon's WebSocket driver; pg: any Postgres over TCP)`,
    )
  }
  const databaseDriver =
    driverName && isDatabaseDriver(driverName) ? driverName : driverForUrl(databaseUrl, neonWsProxy)

  // The Worker's forward budget, read with the claim settings' row (same variable, same default).
  const originTimeoutMs = readInt(env, ORIGIN_TIMEOUT_MS, problems)
  // Unset, the pool wait follows a shorter forward budget instead of refusing to start.
  const defaultPoolWait = Math.min(DB_CONNECT_TIMEOUT_MS.default, Math.floor(originTimeoutMs / 2))
  return {
    databaseUrl,
    databaseDriver,
    neonWsProxy,
    dbQueryTimeoutMs: readInt(env, DB_QUERY_TIMEOUT_MS, problems),
    dbConnectTimeoutMs: readInt(env, DB_CONNECT_TIMEOUT_MS, problems, defaultPoolWait),
    originTimeoutMs,
  }
}

export function isPostgresUrl(value: string): boolean {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(value).protocol)
  } catch {
    return false
  }
}
