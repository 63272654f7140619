/**
 * Running the origin from tests in this process ({@link startOriginInProcess}; as a separate OS
 * process, a pod, it is local/origin-process.ts `startOrigin`); signing requests the way the worker
 * does ({@link signedPost}); event fixtures; and a per-file testbed (fresh database, Neon proxy,
 * origin on port 0) that cleans up after itself.
 * @module
 */
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type pg from 'pg'
import {
  finalizeEvent,
  type InboundEvent,
  type InboundEventDraft,
  type IngestResult,
} from '../../contract/event'
import { signForward } from '../../contract/forward-signature'
import { startNeonWsProxy } from '../../local/neon-ws-proxy'
import { type OriginHandle, startOrigin as startOriginProcess } from '../../local/origin-process'
import { createTestDatabase, databasePool } from '../../local/services'
import { loadConfig, type OriginConfig } from '../../origin/config'
import { type Database, type DatabaseDriver, openDatabase } from '../../origin/db'
import { type Logger, silentLogger } from '../../origin/log'
import { type RunningOrigin, type StartOriginOptions, startOrigin } from '../../origin/server'
import { secretList } from '../../shared/crypto'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')

/**
 * The driver the origins of the integration tests use: `TEST_DATABASE_DRIVER` (vitest.config.ts's
 * `integration-pg` project sets `pg`), else `neon` through the local proxy, as before.
 */
export const TEST_DATABASE_DRIVER: DatabaseDriver =
  process.env.TEST_DATABASE_DRIVER === 'pg' ? 'pg' : 'neon'

export interface InProcessOriginOptions {
  databaseUrl: string
  /** `wsProxy` of a running local/neon-ws-proxy.ts; omit against real Neon. */
  wsProxy?: string
  /** ORIGIN_SHARED_SECRET: one secret or a comma-separated rotation list. */
  secret: string
  /** @default silent */
  logger?: Logger
  /** More origin variables (DATABASE_DRIVER, ...). */
  env?: Record<string, string>
  /** Overrides applied after the env-derived config (e.g. `{ maxEventBytes: 2048 }`). */
  config?: Partial<OriginConfig>
  /** The operator console's wiring; unset: no /console. */
  console?: StartOriginOptions['console']
}

/** The origin's database client on a test database, over `pg` (no proxy), with short bounds. */
export function openTestDb(databaseUrl: string, poolMax = 2): Database {
  const settings = {
    databaseUrl,
    databaseDriver: 'pg',
    neonWsProxy: undefined,
    dbQueryTimeoutMs: 5000,
    dbConnectTimeoutMs: 1000,
    originTimeoutMs: 2000,
  } as const
  return openDatabase(settings, poolMax, silentLogger)
}

/** The OPERATOR_TOKEN of the test origins: `GET /metrics` needs it. */
export const TEST_OPERATOR_TOKEN = `operator-${randomBytes(8).toString('hex')}`

/** An origin's `GET /metrics`, as the operator's scraper asks for it. */
export function fetchMetrics(originUrl: string, token = TEST_OPERATOR_TOKEN): Promise<Response> {
  return fetch(`${originUrl}/metrics`, {
    headers: { authorization: `Bearer ${token}` },
    signal: AbortSignal.timeout(30_000),
  })
}

/** Starts an origin in this process on a free port (127.0.0.1). `close()` drains and ends it. */
export function startOriginInProcess(options: InProcessOriginOptions): Promise<RunningOrigin> {
  const config: OriginConfig = {
    ...loadConfig({
      DATABASE_URL: options.databaseUrl,
      NEON_WS_PROXY: options.wsProxy,
      DATABASE_DRIVER: TEST_DATABASE_DRIVER,
      ORIGIN_SHARED_SECRET: options.secret,
      ORIGIN_PORT: '0',
      OPERATOR_TOKEN: TEST_OPERATOR_TOKEN,
      ...options.env,
    }),
    ...options.config,
  }
  return startOrigin(config, {
    logger: options.logger ?? silentLogger,
    drainTimeoutMs: 2000,
    ...(options.console ? { console: options.console } : {}),
  })
}

/**
 * `npm run origin` as a process of its own (a pod, with the Gmail poller, the relay and the
 * console wired by origin/main.ts from its environment) on a test database, over TCP (`pg`), its
 * errors only logged; `env` adds to or overrides its settings.
 */
export function startOriginPod(
  databaseUrl: string,
  secret: string,
  env: Record<string, string> = {},
): Promise<OriginHandle> {
  return startOriginProcess({
    env: {
      DATABASE_URL: databaseUrl,
      DATABASE_DRIVER: 'pg',
      ORIGIN_SHARED_SECRET: secret,
      LOG_LEVEL: 'error',
      ...env,
    },
  })
}

/**
 * POSTs an event to an origin the way the worker does: the body signed with `secret`.
 * `url` is the origin's base URL (`/v1/events` is appended) or a full URL with a path.
 * `event` may be a raw string, to send bodies that are not valid events.
 */
export async function signedPost(
  url: string,
  event: InboundEvent | string,
  secret: string,
  options: { timestampSeconds?: number; headers?: Record<string, string> } = {},
): Promise<Response> {
  const body = typeof event === 'string' ? event : JSON.stringify(event)
  const target = new URL(url)
  if (target.pathname === '/' || target.pathname === '') target.pathname = '/v1/events'
  return fetch(target, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      // Signed for the route it is sent to, as the Worker signs (scheme v2 binds the route).
      ...(await signForward(secret, body, options.timestampSeconds, {
        method: 'POST',
        path: target.pathname,
      })),
      ...options.headers,
    },
    body,
    signal: AbortSignal.timeout(30_000),
  })
}

export type EventOverrides = Partial<Omit<InboundEventDraft, 'sender'>> & {
  sender?: InboundEventDraft['sender']
}

/**
 * A valid, finalized event (payload hash included); unique keys unless overridden, the message
 * key under the event's tenant.
 */
export function eventFixture(overrides: EventOverrides = {}): Promise<InboundEvent> {
  const id = randomBytes(6).toString('hex')
  const tenant = overrides.tenant ?? 'T0001'
  return finalizeEvent({
    kind: 'message',
    channel: 'slack',
    tenant,
    deliveryKey: `Ev${id}`,
    messageKey: `${tenant}:C0001:${id}`,
    sender: { externalId: 'U0001' },
    body: 'hello from a fixture',
    occurredAt: new Date().toISOString(),
    ...overrides,
  })
}

/** A test file's own origin stack: fresh migrated database, Neon proxy, origin on port 0. */
export interface OriginTestbed {
  origin: RunningOrigin
  databaseUrl: string
  wsProxy: string
  /** ORIGIN_SHARED_SECRET as configured (possibly a comma-separated list). */
  secret: string
  /** Direct TCP access for assertions (bypasses the origin and the proxy). */
  sql: pg.Pool
  /** POSTs a signed event to the origin and reads the JSON answer. */
  post(event: InboundEvent | string): Promise<{ status: number; body: IngestResult }>
  /** Row count of a table, optionally filtered (`where` is trusted test SQL). */
  count(table: string, where?: string, values?: unknown[]): Promise<number>
  close(): Promise<void>
}

export interface OriginTestbedOptions {
  /** ORIGIN_SHARED_SECRET (a rotation list allowed); `post` signs with its first entry. */
  secret?: string
  config?: Partial<OriginConfig>
  logger?: Logger
}

export async function startOriginTestbed(
  options: OriginTestbedOptions = {},
): Promise<OriginTestbed> {
  const secret = options.secret ?? `test-secret-${randomBytes(8).toString('hex')}`
  const signingSecret = secretList(secret)[0]
  if (!signingSecret) throw new Error('startOriginTestbed: empty secret')
  const database = await createTestDatabase()
  const proxy = await startNeonWsProxy({ target: { host: '127.0.0.1', port: 5432 } })
  const sql = databasePool(database.url)
  let origin: RunningOrigin
  try {
    origin = await startOriginInProcess({
      databaseUrl: database.url,
      wsProxy: proxy.wsProxy,
      secret,
      config: options.config,
      logger: options.logger,
    })
  } catch (err) {
    await sql.end()
    await proxy.close()
    await database.drop()
    throw err
  }
  return {
    origin,
    databaseUrl: database.url,
    wsProxy: proxy.wsProxy,
    secret,
    sql,
    async post(event) {
      const res = await signedPost(origin.url, event, signingSecret)
      return { status: res.status, body: (await res.json()) as IngestResult }
    },
    async count(table, where, values) {
      const filter = where ? ` WHERE ${where}` : ''
      const { rows } = await sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${table}${filter}`,
        values,
      )
      return rows[0]?.n ?? 0
    },
    async close() {
      await origin.close()
      await sql.end()
      await proxy.close()
      await database.drop()
    },
  }
}

export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/** `npm run failures -- <args>` against a testbed's database, as an operator runs it. */
export function runFailuresCli(
  tb: Pick<OriginTestbed, 'databaseUrl' | 'wsProxy'>,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'origin/failures/cli.ts', ...args],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          DATABASE_URL: tb.databaseUrl,
          NEON_WS_PROXY: tb.wsProxy,
          DATABASE_DRIVER: TEST_DATABASE_DRIVER,
          ...env,
        },
        timeout: 60_000,
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        resolve({ code, stdout: String(stdout), stderr: String(stderr) })
      },
    )
  })
}
