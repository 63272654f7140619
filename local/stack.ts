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
import { startBalancer } from './balancer'
import { startOrigin } from './origin-process'
import { startRedisLayer } from './redis-layer'
import { databasePool, deleteRedisPrefix } from './services'
import {
  type Stack,
  type StackOptions,
  type StackPiece,
  StackStartError,
  type WorkerRun,
  type WorkerSpec,
} from './stack-options'
import { redisUrlOf, startDatabase, startServers } from './stack-stores'
import { once } from './stoppable'
import { Watchdog } from './watchdog'
import { startWorkerDev, startWorkerMiniflare, type WorkerMiniflareHandle } from './worker-runtime'

export * from './stack-options'
export { REPO_ROOT } from './wrangler-config'

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
