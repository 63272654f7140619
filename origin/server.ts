/**
 * Runs the origin app on `@hono/node-server`: starts listening (port 0 = any free port), and closes
 * gracefully: stop accepting, let requests in flight finish (bounded), then end the database pool.
 * @module
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { createOriginApp, type OriginDeps } from './app'
import type { OriginConfig } from './config'
import { openDatabase } from './db'
import { gatewayReplay } from './failures/unrecognized'
import { createLogger, type Logger } from './log'
import { createMetrics, type OriginMetrics } from './metrics'

export interface StartOriginOptions {
  /** @default a JSON logger at `config.logLevel` */
  logger?: Logger
  /** How long close() lets requests in flight finish before cutting connections. @default 10000 */
  drainTimeoutMs?: number
  /** Served on /metrics; pass one to add counters of your own (the Gmail poller's). @default fresh */
  metrics?: OriginMetrics
  /** The operator console's settings and helpers; unset: no /console. */
  console?: OriginDeps['console']
  /** The connection registry's keys (origin/connections/settings.ts); unset: registry off. */
  connections?: OriginDeps['connections']
}

export interface RunningOrigin {
  /** The port actually bound (useful with port 0). */
  port: number
  /** `http://host:port`, no trailing slash. */
  url: string
  /** Stops accepting, drains requests in flight, ends the pool. Idempotent. */
  close(): Promise<void>
}

/** Bounds on a client that sends slowly or never finishes (each request's own wait). */
const SERVER_TIMEOUTS = { headersTimeout: 10_000, requestTimeout: 30_000 }
const KEEP_ALIVE_TIMEOUT_MS = 5_000

export async function startOrigin(
  config: OriginConfig,
  options: StartOriginOptions = {},
): Promise<RunningOrigin> {
  const logger = options.logger ?? createLogger({ level: config.logLevel })
  const drainTimeoutMs = options.drainTimeoutMs ?? 10_000
  const db = openDatabase(config, config.dbPoolMax, logger)
  const app = createOriginApp({
    db,
    secrets: config.sharedSecrets,
    maxEventBytes: config.maxEventBytes,
    operatorToken: config.operatorToken,
    logger,
    metrics: options.metrics ?? createMetrics(),
    gateway: config.gatewayUrl ? gatewayReplay(config.gatewayUrl, config.sharedSecrets) : null,
    ...(options.console ? { console: options.console } : {}),
    connections: options.connections ?? null,
  })

  const server = serve({
    fetch: app.fetch,
    port: config.port,
    hostname: config.host,
    serverOptions: SERVER_TIMEOUTS,
  }) as Server
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS
  try {
    await new Promise<void>((resolve, reject) => {
      if (server.listening) return resolve()
      server.once('listening', resolve)
      server.once('error', reject)
    })
  } catch (err) {
    await db.close()
    throw err
  }
  const { port } = server.address() as AddressInfo
  const host = config.host.includes(':') ? `[${config.host}]` : config.host

  let closing: Promise<void> | undefined
  return {
    port,
    url: `http://${host}:${port}`,
    close() {
      closing ??= (async () => {
        await drain(server, drainTimeoutMs)
        await db.close()
      })()
      return closing
    },
  }
}

/**
 * `server.close()` stops accepting and resolves once every connection is gone. Keep-alive
 * connections become idle after their response and are closed as they do; anything still open at
 * the deadline is cut.
 */
function drain(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const sweep = setInterval(() => server.closeIdleConnections(), 50)
    const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs)
    server.close(() => {
      clearInterval(sweep)
      clearTimeout(deadline)
      resolve()
    })
    server.closeIdleConnections()
  })
}
