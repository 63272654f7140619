/**
 * The stack a bench run measures: local/stack.ts with the bench's options (the run's database
 * behind the Neon proxy, the Upstash stand-in on the real Redis under the run's key prefix, the
 * origin process, the gateway Worker in Miniflare and the verify-only baseline Worker with the
 * same bindings), plus the same gateway with its settled memo on and the raw-INSERT baseline
 * server. Handed to the cleanup before it starts: a signal mid-start stops what has started.
 * @module
 */
import { join } from 'node:path'
import type { DatabaseLayer } from '../local/database-layer'
import type { OriginHandle } from '../local/origin-process'
import { GroupProcess } from '../local/processes'
import type { RedisLayer } from '../local/redis-layer'
import { type Stack as LocalStack, REPO_ROOT, startStack } from '../local/stack'
import type { WorkerDevHandle } from '../local/worker-runtime'
import type { Cleanup } from './cleanup'
import { BENCH_SECRETS, type BenchConfig, vendorVars } from './config'
import type { LogTally } from './logs'
import { READY } from './raw-insert-server'

export interface Stack {
  local: LocalStack
  database: DatabaseLayer
  /** Stopped and started again (same port) by the Redis-down phase. */
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
  /** The workerd processes of the three Workers. */
  workerdPids: number[]
  /** workerd's inspector for the gateway (BENCH_PROFILE=1 only). */
  gatewayInspectorUrl?: string
  /** The gateway under `wrangler dev` on the same wiring, stopped with the stack. */
  startWorkerDev(onLine: (line: string) => void): Promise<WorkerDevHandle>
  /**
   * Two fresh gateways alike but for their decision counters (default on, and
   * DECISION_FLUSH_SECONDS=0), for the counters' A/B; their workerd processes count under workerd
   * while they run. Stopped by the caller, or with the stack.
   */
  startCountersAb(): Promise<CountersAb>
}

/** The counters' A/B pair: same start, same age, counters on and off. */
export interface CountersAb {
  onUrl: string
  offUrl: string
  stop(): Promise<void>
}

export interface StackOptions {
  config: BenchConfig
  /** The run's fresh database (created and migrated already). */
  databaseUrl: string
  /** The run's Redis key prefix (its keys are deleted on stop). */
  prefix: string
  tally: LogTally
  cleanup: Cleanup
  /** Where the CPU profiles go (BENCH_PROFILE=1), else null. */
  profileDir: string | null
}

/** The memo gateway's setting: room for every key of a run's replay set. */
const MEMO_ON = { SETTLED_MEMO_ENTRIES: '100000', SETTLED_MEMO_SECONDS: '600' }
const COUNTERS_OFF = { DECISION_FLUSH_SECONDS: '0' }
const VERIFY_ONLY_CONFIG = join(REPO_ROOT, 'bench', 'verify-only.wrangler.toml')

export async function startBenchStack(options: StackOptions): Promise<Stack> {
  const { config, profileDir, tally } = options
  const originEnv: Record<string, string> = { LOG_LEVEL: config.originLogLevel }
  if (profileDir) {
    // `--cpu-prof` is refused in NODE_OPTIONS; this preload starts the same profiler.
    originEnv.NODE_OPTIONS = `--require ${join(REPO_ROOT, 'bench', 'cpu-profile-preload.cjs')}`
    originEnv.BENCH_CPU_PROFILE_DIR = profileDir
  }
  const controller = new AbortController()
  const starting = startStack({
    postgres: { url: options.databaseUrl, create: false, migrate: false },
    redis: 'shared',
    keyPrefix: options.prefix,
    upstashToken: BENCH_SECRETS.upstash,
    originSecret: BENCH_SECRETS.origin,
    originEnv,
    onOriginLine: (line) => tally.observe(line),
    worker: { vars: vendorVars(), inspector: profileDir !== null },
    baselineWorker: { wranglerConfig: VERIFY_ONLY_CONFIG },
    signal: controller.signal,
  })
  options.cleanup.add('stack', async () => {
    controller.abort()
    await (await starting.catch(() => undefined))?.stop()
  })
  const local = await starting
  const memoGateway = await local.startWorker({ vars: { ...vendorVars(), ...MEMO_ON } })
  const rawInsert = await startRawInsertServer(local.database.originEnv)
  options.cleanup.add('raw insert server', () => rawInsert.stop({ graceMs: 5_000 }))
  const workers = [local.worker, local.baselineWorker, memoGateway]
  const workerdPids = workers.flatMap((w) => (w?.runtime === 'miniflare' ? w.runtimePids : []))
  const { worker } = local
  return {
    local,
    database: local.database,
    redisLayer: local.redis,
    origin: local.origin,
    gatewayUrl: worker.url,
    verifyOnlyUrl: local.baselineWorker?.url ?? '',
    memoGatewayUrl: memoGateway.url,
    rawInsert: { url: rawInsert.url, pid: rawInsert.process.pid },
    workerdPids,
    gatewayInspectorUrl: worker.runtime === 'miniflare' ? worker.inspectorUrl : undefined,
    async startCountersAb() {
      const [on, off] = await Promise.all([
        local.startWorker({ vars: vendorVars() }),
        local.startWorker({ vars: { ...vendorVars(), ...COUNTERS_OFF } }),
      ])
      const pids = [on, off].flatMap((w) => (w.runtime === 'miniflare' ? w.runtimePids : []))
      workerdPids.push(...pids)
      return {
        onUrl: on.url,
        offUrl: off.url,
        async stop() {
          await Promise.all([on.stop(), off.stop()])
          for (const pid of pids) {
            const at = workerdPids.indexOf(pid)
            if (at >= 0) workerdPids.splice(at, 1)
          }
        },
      }
    },
    async startWorkerDev(onLine) {
      const dev = await local.startWorker({ runtime: 'dev', vars: vendorVars(), onLine })
      if (dev.runtime !== 'dev') throw new Error('wrangler dev did not start as wrangler dev')
      return dev
    },
  }
}

/** The raw-INSERT baseline in its own process, on the origin's database settings. */
async function startRawInsertServer(
  env: Record<string, string>,
): Promise<{ url: string; process: GroupProcess; stop: GroupProcess['stop'] }> {
  const server = new GroupProcess({
    name: 'raw insert server',
    command: process.execPath,
    args: ['--import', 'tsx', join(REPO_ROOT, 'bench', 'raw-insert-server.ts')],
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
  })
  const port = await server.ready((line) => {
    if (!line.includes(READY)) return undefined
    return (JSON.parse(line) as { port: number }).port
  }, 30_000)
  return { url: `http://127.0.0.1:${port}`, process: server, stop: (o) => server.stop(o) }
}
