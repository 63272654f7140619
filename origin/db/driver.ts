/**
 * The one interface the origin's database code (pool.ts, transaction.ts) sees, and its two
 * adapters: `neon` (`@neondatabase/serverless`, Postgres over WebSockets: Neon, or a local server
 * behind local/neon-ws-proxy.ts) and `pg` (node-postgres over TCP: any Postgres 15+, RDS, Cloud
 * SQL, a server of your own). Both are the same `pg` Pool underneath, so statements, prepared
 * names, type parsing and SQLSTATE codes (errors.ts) behave alike; only the transport differs.
 * @module
 */
import { Client, type ClientConfig, Pool as NeonPool, neonConfig } from '@neondatabase/serverless'
import pg from 'pg'
import ws from 'ws'

// Node 20 has no global WebSocket; the Neon driver needs a constructor. Harmless against Neon.
neonConfig.webSocketConstructor = ws

export const DATABASE_DRIVERS = ['neon', 'pg'] as const
export type DatabaseDriver = (typeof DATABASE_DRIVERS)[number]

export function isDatabaseDriver(value: string): value is DatabaseDriver {
  return (DATABASE_DRIVERS as readonly string[]).includes(value)
}

/**
 * The driver when DATABASE_DRIVER is unset: `neon` for a Neon host (`*.neon.tech`) or when a local
 * WebSocket proxy is named (NEON_WS_PROXY), `pg` for any other server.
 */
export function driverForUrl(databaseUrl: string, neonWsProxy: string | undefined): DatabaseDriver {
  if (neonWsProxy) return 'neon'
  try {
    return new URL(databaseUrl).hostname.endsWith('.neon.tech') ? 'neon' : 'pg'
  } catch {
    return 'pg'
  }
}

export interface QueryConfig {
  text: string
  values?: unknown[] | undefined
  name?: string | undefined
}

/** A pooled connection, as both drivers hand it out. */
export interface DriverClient {
  query(config: QueryConfig): Promise<{ rows: unknown[] }>
  query(text: string): Promise<unknown>
  release(destroy?: boolean): void
  on(event: 'error', listener: (err: Error) => void): unknown
}

/** A connection pool, as both drivers provide it. */
export interface DriverPool {
  connect(): Promise<DriverClient>
  end(): Promise<void>
  on(event: 'connect', listener: (client: DriverClient) => void): unknown
  on(event: 'error', listener: (err: Error) => void): unknown
}

export interface DriverPoolOptions {
  driver: DatabaseDriver
  databaseUrl: string
  /** `host:port/v2` of the local proxy (neon only); undefined against real Neon. */
  neonWsProxy?: string | undefined
  max: number
  connectionTimeoutMillis: number
  query_timeout: number
  idleTimeoutMillis: number
}

export function openDriverPool(options: DriverPoolOptions): DriverPool {
  const { driver, databaseUrl, neonWsProxy, ...sizing } = options
  const config = { connectionString: databaseUrl, ...sizing }
  if (driver === 'pg') return new pg.Pool(config) as unknown as DriverPool
  const pool = new NeonPool(config)
  if (neonWsProxy) pool.Client = localProxyClient(neonWsProxy)
  return pool as unknown as DriverPool
}

/**
 * The local proxy settings go on each client rather than on the global `neonConfig`, so pools
 * aimed at different proxies (or at real Neon) can live in one process (tests start several).
 */
function localProxyClient(wsProxy: string): typeof Client {
  return class LocalProxyClient extends Client {
    constructor(config?: string | ClientConfig) {
      super(config)
      const local = this.neonConfig
      local.webSocketConstructor = ws
      // The local proxy speaks plain ws://, no TLS.
      local.useSecureWebSocket = false
      // Pipelined startup is refused with trust auth ("invalid frontend message type 112").
      local.pipelineConnect = false
      local.wsProxy = (host, port) => `${wsProxy}?address=${host}:${port}`
    }
  }
}
