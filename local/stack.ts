/**
 * The one stack builder. `npm run dev`, the end-to-end and email tests, the fault suite, the soak
 * and the bench all start their gateway here, each with the options it needs:
 *
 *   vendors ─► Worker (Miniflare or wrangler dev) ─► [balancer] ─► origin processes
 *                 │                                                   │
 *                 └─► Upstash stand-in ─► Redis          Neon proxy ─► Postgres
 *
 * Postgres is embedded PGlite, a database at a URL, a fresh migrated database on the shared
 * server, or a cluster of the stack's own; Redis the embedded store, a Redis at a URL, the shared
 * one, or a redis-server of the stack's own. A stack with servers of its own has a watchdog
 * (local/watchdog.ts) holding every process it starts. Every piece is wired to the others
 * (ORIGIN_URL, the Upstash URL and token, ORIGIN_SHARED_SECRET, REDIS_KEY_PREFIX), every wait is
 * bounded, and `stop()` stops all of it in reverse order and removes what it made.
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import type pg from 'pg'
import type { DatabaseDriver } from '../origin/db/driver'
import { type Balancer, startBalancer } from './balancer'
import { type DatabaseLayer, startDatabaseLayer } from './database-layer'
import { type OriginHandle, startOrigin } from './origin-process'
import { type PrivatePostgres, startPrivatePostgres } from './private-postgres'
import { type PrivateRedis, startPrivateRedis } from './private-redis'
import { type RedisLayer, startRedisLayer } from './redis-layer'
import { createTestDatabase, databasePool, deleteRedisPrefix, REDIS_URL } from './services'
import { once, type Stoppable } from './stoppable'
import { Watchdog } from './watchdog'
import {
  startWorkerDev,
  startWorkerMiniflare,
  type WorkerDevHandle,
  type WorkerMiniflareHandle,
  type WorkerMiniflareOptions,
} from './worker-runtime'

export { REPO_ROOT } from './wrangler-config'

/**
 * - `embedded`: PGlite in {@link StackOptions.pgliteDir};
 * - `fresh`: a new database on the shared Postgres (local/services.ts), migrated, dropped on stop;
 * - `private`: a Postgres cluster of the stack's own (local/private-postgres.ts), to stop for real;
 * - `{ url }`: that database, created when missing and migrated unless told otherwise.
 */
export type PostgresChoice =
  | 'embedded'
  | 'fresh'
  | 'private'
  | { url: string; create?: boolean; migrate?: boolean }

/**
 * - `embedded`: the in-memory store (lost on stop);
 * - `shared`: the shared Redis (REDIS_URL, local/services.ts);
 * - `private`: a redis-server of the stack's own (local/private-redis.ts), to kill for real;
 * - `{ url }`: that Redis.
 */
export type RedisChoice = 'embedded' | 'shared' | 'private' | { url: string }

/** A Worker wired to the stack; `vars` go on top of wrangler.toml's [vars], under the wiring. */
export type WorkerSpec = (
  | ({ runtime?: 'miniflare' } & Omit<WorkerMiniflareOptions, 'vars' | 'guard'> & {
        vars?: Record<string, string>
      })
  | { runtime: 'dev'; vars?: Record<string, string>; port?: number; onLine?: (l: string) => void }
) & {
  /** This Worker's ORIGIN_URL instead of the stack's origin (the bench's slow proxy in front). */
  originUrl?: string
}

export type WorkerRun = WorkerDevHandle | WorkerMiniflareHandle

/** Each piece as it comes up, for progress lines (`npm run dev`). */
export type ReadyEvent =
  | { piece: 'database'; database: DatabaseLayer }
  | { piece: 'redis'; redis: RedisLayer }
  | { piece: 'origin'; origin: OriginHandle }
  | { piece: 'worker'; worker: WorkerRun }

export type StackPiece = ReadyEvent['piece'] | 'balancer' | 'servers'

/** A piece that did not start; `cause` is what it threw. */
export class StackStartError extends Error {
  readonly piece: StackPiece
  constructor(piece: StackPiece, cause: unknown) {
    super(`${piece}: ${(cause as Error).message}`, { cause })
    this.name = 'StackStartError'
    this.piece = piece
  }
}

export interface StackOptions {
  /** Omitted: no database, and then no origin processes (see `originUrl`). */
  postgres?: PostgresChoice
  /**
   * The origins' DATABASE_DRIVER: `pg` reaches Postgres over TCP (the Neon proxy is then not on
   * their path, and its `dropConnections` does not reach them). @default 'neon', through the proxy
   */
  databaseDriver?: DatabaseDriver
  /** Where PGlite keeps its files. @default '<repo>/.data/pglite' */
  pgliteDir?: string
  redis: RedisChoice
  /**
   * REDIS_KEY_PREFIX of the Worker and the origins. On the shared Redis or one at a URL, the keys
   * under it are deleted on stop.
   */
  keyPrefix?: string
  /** UPSTASH_REDIS_REST_TOKEN. @default a random one */
  upstashToken?: string
  /** ORIGIN_SHARED_SECRET of the origins and the Worker. @default a random one */
  originSecret?: string
  /** 0 or unset: any free port. `origin` is the first origin's. */
  ports?: { upstash?: number; origin?: number; worker?: number; proxy?: number }
  /** Names of the origin processes to start (pods). @default ['origin'] with a database, else [] */
  origins?: string[]
  /** Origin settings on top of the wiring (LOG_LEVEL, DOWNSTREAM_URL, DB_POOL_MAX, ...). */
  originEnv?: Record<string, string>
  /** The origins get the Upstash URL and token too: their Gmail poller claims where the Worker does. */
  originsUseRedis?: boolean
  onOriginLine?: (line: string) => void
  /** An origin running elsewhere (in a test's own process) that the Worker forwards to. */
  originUrl?: string
  /** A balancer (local/balancer.ts) in front of the origins, the first one behind it. */
  balancer?: boolean
  /** The gateway Worker. Unset: none (start one later with {@link Stack.startWorker}). */
  worker?: WorkerSpec
  /** A second Worker with the gateway's bindings from another wrangler config (the bench's verify-only baseline). */
  baselineWorker?: { wranglerConfig: string }
  /** Aborting during start-up stops what has started and rejects (Ctrl-C in `npm run dev`). */
  signal?: AbortSignal
  onReady?: (event: ReadyEvent) => void
}

export interface Stack extends Stoppable {
  /** Throws when the stack has none. */
  readonly database: DatabaseLayer
  redis: RedisLayer
  origins: OriginHandle[]
  /** The first origin; throws when there is none. */
  readonly origin: OriginHandle
  /** Where the Worker forwards: the balancer, the first origin, or `originUrl`. */
  originUrl: string
  balancer?: Balancer
  /** The gateway Worker; throws when there is none. */
  readonly worker: WorkerRun
  baselineWorker?: WorkerMiniflareHandle
  redisServer?: PrivateRedis
  postgresServer?: PrivatePostgres
  watchdog?: Watchdog
  originSecret: string
  upstashToken: string
  keyPrefix?: string
  /** The environment every origin gets (secrets included: do not print). */
  originEnv: Record<string, string>
  /** The Worker's bindings as wired (secrets included: do not print). */
  workerVars: Record<string, string>
  /** A small pool straight to the database (TCP, past the proxy) for assertions; made on first use. */
  readonly sql: pg.Pool
  /** A client of the Redis behind the stand-in (not the embedded store); made on first use. */
  readonly redisClient: Redis
  /** One more origin process on this database (a Gmail pod), not behind the balancer. */
  startOrigin(spec: { name: string; env?: Record<string, string> }): Promise<OriginHandle>
  /** One more Worker wired to this stack (a test entry, `wrangler dev` for the bench). */
  startWorker(spec: WorkerSpec): Promise<WorkerRun>
}

const secret = (what: string) => `${what}-${randomBytes(12).toString('hex')}`

/** Starts what `options` ask for; on any failure (or abort) stops what started, then throws. */
export async function startStack(options: StackOptions): Promise<Stack> {
  const stops: Array<() => Promise<unknown>> = []
  const stopAll = once(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => {})
  })
  const step = async <T>(piece: StackPiece, start: () => Promise<T>): Promise<T> => {
    options.signal?.throwIfAborted()
    try {
      return await start()
    } catch (err) {
      throw err instanceof StackStartError ? err : new StackStartError(piece, err)
    }
  }
  try {
    return await build(options, stops, step, stopAll)
  } catch (err) {
    await stopAll()
    throw err
  }
}

type Step = <T>(piece: StackPiece, start: () => Promise<T>) => Promise<T>

async function build(
  options: StackOptions,
  stops: Array<() => Promise<unknown>>,
  step: Step,
  stopAll: () => Promise<void>,
): Promise<Stack> {
  const own = options.postgres === 'private' || options.redis === 'private'
  const watchdog = own
    ? new Watchdog(mkdtempSync(join(tmpdir(), 'inbound-dedup-stack-')))
    : undefined
  if (watchdog) stops.push(async () => watchdog.stop())
  const { redisServer, postgresServer } = await step('servers', () =>
    startServers(options, watchdog, stops),
  )
  const upstashToken = options.upstashToken ?? secret('upstash')
  const originSecret = options.originSecret ?? secret('origin')
  const redisUrl = redisUrlOf(options.redis, redisServer)

  // Both at once; allSettled, so that a failure of one never leaves the other unstopped.
  const [databaseResult, redisResult] = await Promise.allSettled([
    step('database', () => startDatabase(options, postgresServer, stops)),
    step('redis', async () => {
      const layer = await startRedisLayer({
        redisUrl,
        token: upstashToken,
        port: options.ports?.upstash,
      })
      stops.push(() => layer.stop())
      return layer
    }),
  ])
  if (databaseResult.status === 'rejected') throw databaseResult.reason
  if (redisResult.status === 'rejected') throw redisResult.reason
  const database = databaseResult.value
  const redis = redisResult.value
  if (database) options.onReady?.({ piece: 'database', database })
  options.onReady?.({ piece: 'redis', redis })
  if (options.keyPrefix !== undefined && redisUrl && options.redis !== 'private') {
    const prefix = options.keyPrefix
    stops.push(() => deleteRedisPrefix(prefix, redisUrl))
  }

  const originEnv: Record<string, string> = {
    ...database?.originEnv,
    ...(options.databaseDriver ? { DATABASE_DRIVER: options.databaseDriver } : {}),
    ...(options.keyPrefix !== undefined ? { REDIS_KEY_PREFIX: options.keyPrefix } : {}),
    ...(options.originsUseRedis
      ? { UPSTASH_REDIS_REST_URL: redis.url, UPSTASH_REDIS_REST_TOKEN: upstashToken }
      : {}),
    // Where a replay of an unrecognized event is classified again: the Worker, when its port is
    // known before the origins start (npm run dev's fixed ports).
    ...(options.ports?.worker ? { GATEWAY_URL: `http://127.0.0.1:${options.ports.worker}` } : {}),
    ...options.originEnv,
    ORIGIN_SHARED_SECRET: originSecret,
  }
  const launchOrigin = async (name: string, env: Record<string, string> = {}, port?: number) => {
    if (!database) throw new Error('origin processes need a database (options.postgres)')
    const origin = await startOrigin({
      name,
      port,
      env: { ...originEnv, ...env },
      onLine: options.onOriginLine,
      guard: watchdog,
    })
    stops.push(() => origin.stop())
    options.onReady?.({ piece: 'origin', origin })
    return origin
  }
  const names = options.origins ?? (database ? ['origin'] : [])
  const origins = await step('origin', () =>
    Promise.all(
      names.map((name, i) => launchOrigin(name, {}, i === 0 ? options.ports?.origin : 0)),
    ),
  )

  const balancer = options.balancer
    ? await step('balancer', async () => {
        const started = await startBalancer(origins[0] ? [origins[0].url] : [])
        stops.push(() => started.close())
        return started
      })
    : undefined
  const originUrl = balancer?.url ?? origins[0]?.url ?? options.originUrl
  if (!originUrl) throw new Error('the Worker needs an origin: start one, or give originUrl')

  const wiring = {
    ORIGIN_URL: originUrl,
    ORIGIN_SHARED_SECRET: originSecret,
    UPSTASH_REDIS_REST_URL: redis.url,
    UPSTASH_REDIS_REST_TOKEN: upstashToken,
    ...(options.keyPrefix !== undefined ? { REDIS_KEY_PREFIX: options.keyPrefix } : {}),
  }
  const startWorker = (spec: WorkerSpec) =>
    step('worker', async () => {
      const vars = {
        ...spec.vars,
        ...wiring,
        ...(spec.originUrl ? { ORIGIN_URL: spec.originUrl } : {}),
      }
      const worker: WorkerRun =
        spec.runtime === 'dev'
          ? await startWorkerDev({ ...spec, vars })
          : await startWorkerMiniflare({ ...spec, vars, guard: watchdog })
      stops.push(() => worker.stop())
      return worker
    })
  const worker = options.worker
    ? await startWorker({ port: options.ports?.worker, ...options.worker })
    : undefined
  if (worker) options.onReady?.({ piece: 'worker', worker })
  const workerVars = { ...options.worker?.vars, ...wiring }
  const baselineWorker = options.baselineWorker
    ? ((await startWorker({
        wranglerConfig: options.baselineWorker.wranglerConfig,
        vars: options.worker?.vars,
      })) as WorkerMiniflareHandle)
    : undefined

  let sql: pg.Pool | undefined
  let redisClient: Redis | undefined
  return {
    get database() {
      if (!database) throw new Error('this stack has no database')
      return database
    },
    redis,
    origins,
    get origin() {
      const [first] = origins
      if (!first) throw new Error('this stack has no origin process')
      return first
    },
    originUrl,
    balancer,
    get worker() {
      if (!worker) throw new Error('this stack has no Worker')
      return worker
    },
    baselineWorker,
    redisServer,
    postgresServer,
    watchdog,
    originSecret,
    upstashToken,
    keyPrefix: options.keyPrefix,
    originEnv,
    workerVars,
    get sql() {
      if (!database) throw new Error('this stack has no database')
      if (!sql) {
        const pool = databasePool(database.databaseUrl, 4)
        stops.push(() => pool.end())
        sql = pool
      }
      return sql
    },
    get redisClient() {
      if (!redisUrl) throw new Error('the embedded store has no Redis client')
      if (!redisClient) {
        const client = new Redis(redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 3_000 })
        // Down in an outage case: commands fail, the client does not crash the run.
        client.on('error', () => {})
        stops.push(async () => client.disconnect())
        redisClient = client
      }
      return redisClient
    },
    startOrigin: ({ name, env }) => step('origin', () => launchOrigin(name, env)),
    startWorker,
    stop: stopAll,
  }
}

function redisUrlOf(choice: RedisChoice, server: PrivateRedis | undefined): string | undefined {
  if (choice === 'embedded') return undefined
  if (choice === 'shared') return REDIS_URL
  if (choice === 'private') return server?.url
  return choice.url
}

/** The stack's own redis-server and Postgres cluster, when asked for (side by side). */
async function startServers(
  options: StackOptions,
  watchdog: Watchdog | undefined,
  stops: Array<() => Promise<unknown>>,
): Promise<{ redisServer?: PrivateRedis; postgresServer?: PrivatePostgres }> {
  if (!watchdog) return {}
  const [redisResult, postgresResult] = await Promise.allSettled([
    options.redis === 'private' ? startPrivateRedis(join(watchdog.root, 'redis'), watchdog) : null,
    options.postgres === 'private' ? startPrivatePostgres(watchdog.root, watchdog) : null,
  ])
  const redisServer = redisResult.status === 'fulfilled' ? redisResult.value : null
  const postgresServer = postgresResult.status === 'fulfilled' ? postgresResult.value : null
  if (redisServer) stops.push(() => redisServer.stop())
  if (postgresServer) stops.push(() => postgresServer.close())
  if (redisResult.status === 'rejected') throw redisResult.reason
  if (postgresResult.status === 'rejected') throw postgresResult.reason
  return { redisServer: redisServer ?? undefined, postgresServer: postgresServer ?? undefined }
}

async function startDatabase(
  options: StackOptions,
  server: PrivatePostgres | undefined,
  stops: Array<() => Promise<unknown>>,
): Promise<DatabaseLayer | undefined> {
  const choice = options.postgres
  if (choice === undefined) return undefined
  const proxyPort = options.ports?.proxy
  let layer: DatabaseLayer
  if (choice === 'embedded') {
    layer = await startDatabaseLayer({ pgliteDir: options.pgliteDir, proxyPort })
  } else if (choice === 'fresh') {
    const db = await createTestDatabase()
    stops.push(() => db.drop())
    layer = await startDatabaseLayer({
      databaseUrl: db.url,
      createDatabase: false,
      migrate: false,
      proxyPort,
    })
  } else if (choice === 'private') {
    if (!server) throw new Error('no private Postgres')
    layer = await startDatabaseLayer({
      databaseUrl: server.databaseUrl('inbound_dedup_stack'),
      proxyPort,
    })
  } else {
    layer = await startDatabaseLayer({
      databaseUrl: choice.url,
      createDatabase: choice.create,
      migrate: choice.migrate,
      proxyPort,
    })
  }
  stops.push(() => layer.stop())
  return layer
}
