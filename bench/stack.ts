/**
 * The stack a bench run measures, from local/stack.ts: the database layer (Neon proxy) and the
 * Upstash stand-in, the origin process, the gateway Worker in Miniflare, and the verify-only
 * baseline Worker. Each piece is handed to the cleanup as soon as it is up.
 * @module
 */
import { fork } from 'node:child_process'
import { join } from 'node:path'
import {
  type DatabaseLayer,
  type OriginHandle,
  REPO_ROOT,
  type RedisLayer,
  startDatabaseLayer,
  startOrigin,
  startRedisLayer,
  startWorkerMiniflare,
} from '../local/stack'
import type { Cleanup } from './cleanup'
import { BENCH_SECRETS, type BenchConfig, vendorVars } from './config'
import { childPids } from './cpu'
import type { LogTally } from './logs'
import { serveBundle } from './miniflare'

export interface Stack {
  database: DatabaseLayer
  redisLayer: RedisLayer
  origin: OriginHandle
  gatewayUrl: string
  verifyOnlyUrl: string
  /**
   * The same gateway with its in-isolate memo of settled keys on (SETTLED_MEMO_ENTRIES): the
   * storm's labelled second figure (one isolate here; production retries land on many).
   */
  memoGatewayUrl: string
  /** The raw-INSERT baseline (bench/raw-insert-server.ts). */
  rawInsert: { url: string; pid: number }
  gatewayVars: Record<string, string>
  workerdPids: number[]
  /** workerd's inspector for the gateway (BENCH_PROFILE=1 only). */
  gatewayInspectorUrl?: string
}

export interface StackOptions {
  config: BenchConfig
  /** The run's fresh database (created and migrated already). */
  databaseUrl: string
  /** The run's Redis key prefix. */
  prefix: string
  tally: LogTally
  cleanup: Cleanup
  /** Where the CPU profiles go (BENCH_PROFILE=1), else null. */
  profileDir: string | null
  redisUrl: string
}

/** The memo gateway's setting: room for every key of a run's replay set. */
const MEMO_ON = { SETTLED_MEMO_ENTRIES: '100000', SETTLED_MEMO_SECONDS: '600' }

export async function startStack(options: StackOptions): Promise<Stack> {
  const { config, cleanup, tally, profileDir } = options
  const [databaseResult, redisResult] = await Promise.allSettled([
    startDatabaseLayer({ databaseUrl: options.databaseUrl, createDatabase: false, migrate: false }),
    startUpstashStandIn(options.redisUrl),
  ])
  if (databaseResult.status === 'fulfilled') {
    cleanup.addStoppable('database layer', databaseResult.value)
  }
  if (redisResult.status === 'fulfilled') cleanup.addStoppable('redis layer', redisResult.value)
  if (databaseResult.status === 'rejected') throw databaseResult.reason
  if (redisResult.status === 'rejected') throw redisResult.reason
  const database = databaseResult.value
  const redisLayer = redisResult.value

  const originEnv: Record<string, string> = {
    ...database.originEnv,
    ORIGIN_SHARED_SECRET: BENCH_SECRETS.origin,
    LOG_LEVEL: config.originLogLevel,
  }
  if (profileDir) {
    // `--cpu-prof` is refused in NODE_OPTIONS; this preload starts the same profiler.
    originEnv.NODE_OPTIONS = `--require ${join(REPO_ROOT, 'bench', 'cpu-profile-preload.cjs')}`
    originEnv.BENCH_CPU_PROFILE_DIR = profileDir
  }
  const origin = await startOrigin({ env: originEnv, onLine: (line) => tally.observe(line) })
  cleanup.addStoppable('origin', origin)

  const gatewayVars = {
    ...vendorVars(options.prefix),
    ORIGIN_URL: origin.url,
    ORIGIN_SHARED_SECRET: BENCH_SECRETS.origin,
    UPSTASH_REDIS_REST_URL: redisLayer.url,
    UPSTASH_REDIS_REST_TOKEN: BENCH_SECRETS.upstash,
  }
  const known = new Set(childPids('workerd'))
  // Profiling needs workerd's inspector, which local/stack.ts does not open: same bundle, same
  // Miniflare listener, served by bench/miniflare.ts instead.
  const worker = profileDir
    ? await serveBundle('gateway', gatewayVars, true)
    : await startWorkerMiniflare({ vars: gatewayVars })
  cleanup.addStoppable('gateway worker (Miniflare)', worker)
  const verifyOnly = await serveBundle('verify-only', gatewayVars)
  cleanup.addStoppable('verify-only worker', verifyOnly)
  const memoGateway = await serveBundle('gateway', { ...gatewayVars, ...MEMO_ON })
  cleanup.addStoppable('gateway worker, memo on (Miniflare)', memoGateway)
  const rawInsert = await startRawInsertServer(database.originEnv)
  cleanup.addStoppable('raw insert server', rawInsert)
  return {
    database,
    redisLayer,
    origin,
    gatewayUrl: worker.url,
    verifyOnlyUrl: verifyOnly.url,
    memoGatewayUrl: memoGateway.url,
    rawInsert,
    gatewayVars,
    workerdPids: childPids('workerd').filter((pid) => !known.has(pid)),
    gatewayInspectorUrl: 'inspectorUrl' in worker ? worker.inspectorUrl : undefined,
  }
}

/** The Upstash stand-in on the real Redis; on `port` when given (a restart keeps the Worker's URL). */
export function startUpstashStandIn(redisUrl: string, port?: number): Promise<RedisLayer> {
  return startRedisLayer({
    redisUrl,
    token: BENCH_SECRETS.upstash,
    ...(port === undefined ? {} : { port }),
  })
}

/** The raw-INSERT baseline in its own process, on the origin's database settings. */
function startRawInsertServer(
  env: Record<string, string>,
): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const child = fork(join(REPO_ROOT, 'bench', 'raw-insert-server.ts'), [], {
    cwd: REPO_ROOT,
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill('SIGTERM')
    await exited
  }
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error('raw insert server did not start within 30 s'))
    }, 30_000)
    child.once('message', (message: { port: number }) => {
      clearTimeout(timer)
      resolve({ url: `http://127.0.0.1:${message.port}`, pid: child.pid ?? 0, stop })
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`raw insert server exited at start (code ${code})`))
    })
  })
}
