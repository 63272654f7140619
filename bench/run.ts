/**
 * `npm run bench`: how fast the gateway is, at what cost, against what baseline, on this machine.
 *
 * Starts the local stack (local/stack.ts: a fresh Postgres database behind the Neon proxy, the
 * Upstash stand-in on the real Redis under a unique key prefix, the origin process, the Worker
 * bundle in Miniflare), plus the verify-only baseline Worker and a load generator process, then:
 *
 *   warm-up → redis-benchmark (SET NX PX GET) → seed (N new events: the replay set and the Redis
 *   memory sample) → for each concurrency: verify-only, duplicate storm, first-seen → mixed 1:7 →
 *   origin insert and replay called directly → Upstash stand-in SET NX called directly →
 *   `wrangler dev` first-seen and storm → Redis down (stand-in stopped, Postgres decides).
 *
 * Writes bench/results/latest.{json,md} and chart.svg, prints the table and the targets, drops the
 * database, deletes the key prefix, stops every process. Exit code 1 only for a real failure: the
 * harness could not run, a correctness check failed (a 2xx event without its row, a replay that
 * made a row, an unaccounted request), or cleanup failed. Targets not reached are reported, not
 * failures.
 *
 * Settings: BENCH_DURATION_S (6), BENCH_SWEEP (10,50,100), BENCH_MAX_REQUESTS, BENCH_SEED_EVENTS,
 * BENCH_WRANGLER_DEV=0, BENCH_PROFILE=1 (origin --cpu-prof), BENCH_ORIGIN_LOG_LEVEL, REDIS_URL,
 * DATABASE_URL (admin connection; a fresh database is created next to it).
 * @module
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import pg from 'pg'
import {
  type DatabaseLayer,
  type OriginHandle,
  REPO_ROOT,
  type RedisLayer,
  type Stoppable,
  startDatabaseLayer,
  startOrigin,
  startRedisLayer,
  startWorkerDev,
  startWorkerMiniflare,
  type WorkerDevHandle,
} from '../local/stack'
import {
  assertServicesUp,
  createTestDatabase,
  deleteRedisPrefix,
  REDIS_URL,
} from '../test/support/services'
import { renderChart } from './chart'
import { BENCH_SECRETS, type BenchConfig, loadBenchConfig, vendorVars } from './config'
import { CpuSampler, childPids, groupPids } from './cpu'
import { LoadGenerator } from './load'
import { captureConsoleLines, LogTally } from './logs'
import { serveBundle } from './miniflare'
import { largestProfile, summarizeProfile } from './profile'
import { redisBenchmark, sampleKeyMemory, scanKeys, usedMemory } from './redis'
import {
  type BenchReport,
  cpuTable,
  judgeTargets,
  type MachineInfo,
  type MemoryReport,
  machineInfo,
  markdown,
  resultsTable,
  targetsList,
} from './report'
import {
  EventFactory,
  mixed,
  replays,
  signOriginRequests,
  signVendorRequests,
  type VendorEvent,
  type WireRequest,
} from './requests'
import { runStep, type StepContext, type StepResult, type StepSpec } from './steps'
import { fmt, round, sleep, within } from './util'
import { WorkerProfiler } from './worker-profiler'

const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results')
const GATEWAY = 'gateway (Miniflare)'
const GATEWAY_DEV = 'gateway (wrangler dev)'
const VERIFY_ONLY = 'verify-only (Miniflare)'
const ORIGIN_DIRECT = 'origin (direct)'
const UPSTASH_DIRECT = 'Upstash stand-in (direct)'
/** Replays per new event in the mixed scenario (Twilio-style retries). */
const MIXED_REPLAYS = 7
const WORKERD_PROFILE = 'workerd-gateway.cpuprofile'
const WARMUP_S = 2
/** The seed step sends its events, or stops after this long (a busy machine is slow). */
const SEED_MAX_S = 8
/** What the `wrangler dev` section needs beyond its steps (start-up, warm-up), seconds. */
const WRANGLER_DEV_OVERHEAD_S = 20

const startedAt = Date.now()

/** A function's parameters after the first. */
type RestOf<F> = F extends (first: never, ...rest: infer R) => unknown ? R : never

function say(message: string): void {
  const t = ((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)
  process.stdout.write(`[bench ${t}s] ${message}\n`)
}

/**
 * Things to undo, newest first; each bounded, each failure recorded, none stops the others.
 * `runAll` runs once (a signal and the normal end share it); a piece registered after it started
 * is stopped at once.
 */
class Cleanup {
  private tasks: Array<{ name: string; run: () => Promise<unknown> }> = []
  private running: Promise<void> | undefined
  private problems: string[] = []

  add(name: string, run: () => Promise<unknown>): void {
    if (this.running) {
      void this.runOne({ name, run })
      return
    }
    this.tasks.push({ name, run })
  }

  addStoppable(name: string, piece: Stoppable): void {
    this.add(name, () => piece.stop())
  }

  private async runOne(task: { name: string; run: () => Promise<unknown> }): Promise<void> {
    try {
      await within(task.run(), 20_000, `cleanup: ${task.name}`)
    } catch (err) {
      this.problems.push(`cleanup failed: ${task.name}: ${(err as Error).message}`)
    }
  }

  runAll(problems: string[]): Promise<void> {
    this.problems = problems
    this.running ??= (async () => {
      for (const task of this.tasks.reverse()) await this.runOne(task)
      this.tasks = []
    })()
    return this.running
  }
}

/** The run's SIGINT / SIGTERM handler (set by main): cleans up, then exits 130. */
let signalHandler: ((signal: NodeJS.Signals) => void) | undefined

/**
 * Miniflare installs SIGINT / SIGTERM listeners that dispose workerd and exit at once, which would
 * end the run before its cleanup drops the database and deletes the keys. Ours disposes Miniflare
 * too (its stop is a cleanup task), so after the stack is up the signals are ours alone.
 */
function claimSignals(): void {
  if (!signalHandler) return
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    for (const listener of process.listeners(signal)) {
      if (listener !== signalHandler) process.removeListener(signal, listener)
    }
  }
}

function packageVersion(name: string): string | undefined {
  try {
    const file = join(REPO_ROOT, 'node_modules', name, 'package.json')
    return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version
  } catch {
    return undefined
  }
}

/** Waits until no key under the prefix is still `inflight` (completes run after the answer). */
async function waitForSettledKeys(redis: Redis, prefix: string, timeoutMs: number) {
  const until = Date.now() + timeoutMs
  let inflight = 0
  do {
    const keys = await scanKeys(redis, `${prefix}dedup:*`)
    inflight = 0
    for (let i = 0; i < keys.length; i += 500) {
      const values = await redis.mget(...keys.slice(i, i + 500))
      inflight += values.filter((v) => v?.startsWith('inflight|')).length
    }
    if (inflight === 0) return 0
    await sleep(200)
  } while (Date.now() < until)
  return inflight
}

async function countDedupKeys(redis: Redis, prefix: string): Promise<number> {
  return (await scanKeys(redis, `${prefix}dedup:*`)).filter((k) => !k.endsWith('dedup:stats'))
    .length
}

interface Stack {
  database: DatabaseLayer
  redisLayer: RedisLayer
  origin: OriginHandle
  gatewayUrl: string
  verifyOnlyUrl: string
  gatewayVars: Record<string, string>
  workerdPids: number[]
  /** workerd's inspector for the gateway (BENCH_PROFILE=1 only). */
  gatewayInspectorUrl?: string
}

async function startStack(
  config: BenchConfig,
  databaseUrl: string,
  prefix: string,
  tally: LogTally,
  cleanup: Cleanup,
  profileDir: string | null,
): Promise<Stack> {
  const [databaseResult, redisResult] = await Promise.allSettled([
    startDatabaseLayer({ databaseUrl, createDatabase: false, migrate: false }),
    startRedisLayer({ redisUrl: REDIS_URL, token: BENCH_SECRETS.upstash }),
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
    ...vendorVars(prefix),
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
  return {
    database,
    redisLayer,
    origin,
    gatewayUrl: worker.url,
    verifyOnlyUrl: verifyOnly.url,
    gatewayVars,
    workerdPids: childPids('workerd').filter((pid) => !known.has(pid)),
    gatewayInspectorUrl: 'inspectorUrl' in worker ? worker.inspectorUrl : undefined,
  }
}

/** Unmeasured traffic (JIT, connection pools, isolates): the pool, or 2 s, whichever ends first. */
async function warmUp(load: LoadGenerator, url: string, requests: WireRequest[]): Promise<void> {
  await load.run({ url, requests, connections: 10, durationS: WARMUP_S, timeoutS: 10 })
}

function upstashRequests(prefix: string, count: number): WireRequest[] {
  return Array.from({ length: count }, (_, i) => ({
    method: 'POST' as const,
    path: '/',
    headers: {
      authorization: `Bearer ${BENCH_SECRETS.upstash}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify([
      'set',
      `${prefix}sb:${i}`,
      'inflight|0123456789abcdef|0123456789abcdef',
      'nx',
      'px',
      '60000',
      'get',
    ]),
  }))
}

function withRatios(steps: StepResult[]): StepResult[] {
  return steps.map((step) => {
    const base = step.baselineId ? steps.find((s) => s.id === step.baselineId) : undefined
    if (!base || base.eventsPerS === 0) return step
    return { ...step, ratio: round(step.eventsPerS / base.eventsPerS, 2) }
  })
}

async function bench(
  config: BenchConfig,
  machine: MachineInfo,
  tally: LogTally,
  cleanup: Cleanup,
  problems: string[],
): Promise<BenchReport> {
  const notes: string[] = []
  const tag = config.runTag
  const prefix = `bench:${tag}:`
  const c50 = config.headlineConcurrency
  say(`run ${tag}: ${config.durationS} s per step, sweep c=${config.sweep.join(',')}`)
  await assertServicesUp()

  cleanup.add('delete Redis keys', () => deleteRedisPrefix(prefix))
  const db = await createTestDatabase(`bench_${tag}`)
  cleanup.add('drop database', () => db.drop())
  say(`database ${db.name} created and migrated; Redis key prefix ${prefix}`)

  const profileDir = config.profile ? join(RESULTS_DIR, 'profiles', tag) : null
  if (profileDir) mkdirSync(profileDir, { recursive: true })
  const stack = await startStack(config, db.url, prefix, tally, cleanup, profileDir)
  claimSignals()
  say(
    `stack up: gateway ${stack.gatewayUrl}, verify-only ${stack.verifyOnlyUrl}, origin ${stack.origin.url}`,
  )

  const load = await LoadGenerator.start()
  cleanup.add('load generator', () => load.stop())
  const sql = new pg.Pool({ connectionString: db.url, max: 2 })
  cleanup.add('bench pg pool', () => sql.end())
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, connectTimeout: 3_000 })
  redis.on('error', () => {})
  cleanup.add('bench redis client', async () => redis.disconnect())

  machine.redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1]
  machine.postgresVersion = (
    await sql.query<{ v: string }>("SELECT current_setting('server_version') AS v")
  ).rows[0]?.v
  machine.wrangler = packageVersion('wrangler')
  machine.miniflare = packageVersion('miniflare')
  const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1] ?? 0)

  let dev: WorkerDevHandle | undefined
  const sampler = new CpuSampler([
    { name: 'workerd', pids: () => stack.workerdPids },
    { name: 'wrangler dev', pids: () => (dev ? groupPids(dev.pid) : []) },
    { name: 'origin', pids: () => (stack.origin.running ? groupPids(stack.origin.pid) : []) },
    {
      name: 'postgres',
      pids: async () =>
        (
          await sql.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [
            db.name,
          ])
        ).rows.map((r) => r.pid),
    },
    { name: 'redis-server', pids: () => (redisPid ? [redisPid] : []) },
    { name: 'bench (stand-in, neon proxy)', pids: () => [process.pid] },
    { name: 'load generator', pids: () => (load.pid ? [load.pid] : []) },
  ])
  const ctx: StepContext = {
    load,
    sql,
    sampler,
    tally,
    durationS: config.durationS,
    timeoutS: 10,
    freshOwners: new Map(),
  }
  const factory = new EventFactory(tag)
  const steps: StepResult[] = []
  const pool = config.maxRequestsPerStep
  const record = (step: StepResult) => {
    steps.push(step)
    const failed = step.checks.filter((c) => !c.ok)
    say(
      `${step.id.padEnd(34)} ${fmt(step.eventsPerS).padStart(6)} events/s  p50 ${fmt(step.latency.p50, 1)}  ` +
        `p95 ${fmt(step.latency.p95, 1)}  p99 ${fmt(step.latency.p99, 1)} ms  non-2xx ${step.non2xx}  ` +
        `errors ${step.errors}${step.rowsCreated === null ? '' : `  rows ${step.rowsCreated}`}` +
        `${failed.length ? `  CHECK FAILED: ${failed.map((c) => c.name).join('; ')}` : ''}`,
    )
  }
  const run = async (spec: StepSpec) => {
    const outcome = await runStep(ctx, spec)
    record(outcome.result)
    return outcome
  }

  // Warm-up ----------------------------------------------------------------------------------
  say('warming up the gateway, verify-only worker and origin')
  await warmUp(
    load,
    stack.gatewayUrl,
    await signVendorRequests(factory.fresh(config.warmupRequests)),
  )
  await warmUp(
    load,
    stack.verifyOnlyUrl,
    await signVendorRequests(factory.fresh(config.warmupRequests)),
  )
  await warmUp(
    load,
    stack.origin.url,
    await signOriginRequests(factory.fresh(config.warmupRequests / 2)),
  )
  await waitForSettledKeys(redis, prefix, 10_000)

  const workerProfiler = stack.gatewayInspectorUrl
    ? await WorkerProfiler.start(stack.gatewayInspectorUrl)
    : undefined

  // Redis on its own -------------------------------------------------------------------------
  say('redis-benchmark: SET NX PX GET straight at Redis')
  const redisBaseline = await redisBenchmark(REDIS_URL, prefix, config.redisBenchmarkRequests, c50)
  say(
    redisBaseline.status === 'ok'
      ? `redis-benchmark ${fmt(redisBaseline.rps)} requests/s, p99 ${redisBaseline.p99} ms`
      : `redis-benchmark ${redisBaseline.note}`,
  )

  // Seed: the replay set, and what each key costs in Redis -----------------------------------
  const keysBefore = await countDedupKeys(redis, prefix)
  const usedBefore = await usedMemory(redis)
  const seedEvents = factory.fresh(config.seedEvents)
  const seed = await run({
    id: 'seed',
    scenario: `seed: first-seen (≤ ${fmt(config.seedEvents)} events, ≤ ${SEED_MAX_S} s)`,
    kind: 'scenario',
    target: GATEWAY,
    url: stack.gatewayUrl,
    concurrency: c50,
    requests: await signVendorRequests(seedEvents),
    events: seedEvents,
    fresh: 'all',
    baselineId: `origin-insert@${c50}`,
    durationS: SEED_MAX_S,
  })
  const stillInflight = await waitForSettledKeys(redis, prefix, 10_000)
  if (stillInflight > 0) problems.push(`${stillInflight} seed keys still inflight after 10 s`)
  const usedAfter = await usedMemory(redis)
  const keysCreated = (await countDedupKeys(redis, prefix)) - keysBefore
  const seen: VendorEvent[] = seedEvents.filter((_, i) => {
    const status = seed.statuses[i] ?? 0
    return status >= 200 && status < 300
  })
  // Only acknowledged events are "already seen"; a machine too busy to take half is no benchmark.
  if (seen.length < 100) {
    throw new Error(
      `only ${seen.length} seed events were acknowledged: no replay set to storm with`,
    )
  }
  const memory: MemoryReport = {
    sample: await sampleKeyMemory(redis, prefix, config.memorySampleKeys),
    keysCreated,
    usedMemoryBefore: usedBefore,
    usedMemoryAfter: usedAfter,
    bytesPerKeyInfo: round((usedAfter - usedBefore) / Math.max(1, keysCreated), 1),
  }
  say(
    `Redis: ${fmt(memory.sample.production.avgBytes, 1)} B/key (MEMORY USAGE, production key ` +
      `names; ${fmt(memory.sample.avgBytes, 1)} with the bench prefix), ` +
      `${fmt(memory.bytesPerKeyInfo, 1)} B/key (INFO used_memory over ${fmt(keysCreated)} keys)`,
  )

  /**
   * A step at a gateway: every request a new event, or every request a replay of an acknowledged
   * seed event (Slack's re-signed, as its retries are).
   */
  const gatewayStep = async (
    traffic: 'new' | 'replays',
    id: string,
    scenario: string,
    target: string,
    url: string,
    c: number,
    baselineId?: string,
  ): Promise<StepSpec> => {
    const events = traffic === 'new' ? factory.fresh(pool) : replays(seen, pool)
    return {
      id,
      scenario,
      kind: 'scenario',
      target,
      url,
      concurrency: c,
      events,
      fresh: traffic === 'new' ? 'all' : 'none',
      baselineId,
      requests: await signVendorRequests(events),
    }
  }
  const storm = (...args: RestOf<typeof gatewayStep>) => gatewayStep('replays', ...args)
  const firstSeen = (...args: RestOf<typeof gatewayStep>) => gatewayStep('new', ...args)

  // The sweep: verify-only, duplicate storm and first-seen side by side at each concurrency ----
  for (const c of config.sweep) {
    const verifyOnly = await storm(
      `verify-only@${c}`,
      'baseline: verify-only',
      VERIFY_ONLY,
      stack.verifyOnlyUrl,
      c,
    )
    await run({ ...verifyOnly, kind: 'baseline', events: [], touchesDatabase: false })
    await run(
      await storm(
        `duplicate-storm@${c}`,
        'duplicate storm',
        GATEWAY,
        stack.gatewayUrl,
        c,
        `verify-only@${c}`,
      ),
    )
    await run(
      await firstSeen(
        `first-seen@${c}`,
        'first-seen',
        GATEWAY,
        stack.gatewayUrl,
        c,
        `origin-insert@${c50}`,
      ),
    )
  }

  // Mixed: 1 new : 7 replays -------------------------------------------------------------------
  const mix = mixed(factory, seen, pool, MIXED_REPLAYS)
  await run({
    id: `mixed@${c50}`,
    scenario: `mixed 1 new : ${MIXED_REPLAYS} replays`,
    kind: 'scenario',
    target: GATEWAY,
    url: stack.gatewayUrl,
    concurrency: c50,
    requests: await signVendorRequests(mix.events),
    events: mix.events,
    fresh: mix.fresh,
    baselineId: `verify-only@${c50}`,
  })

  // Redis down: the stand-in stopped, every replay decided by Postgres ------------------------
  say('stopping the Upstash stand-in: Redis down')
  await stack.redisLayer.stop()
  await run(
    await storm(
      `redis-down@${c50}`,
      'Redis down (replays)',
      GATEWAY,
      stack.gatewayUrl,
      c50,
      `origin-replay@${c50}`,
    ),
  )
  // Back on the same port (the Worker's UPSTASH_REDIS_REST_URL), for what follows.
  stack.redisLayer = await startRedisLayer({
    redisUrl: REDIS_URL,
    token: BENCH_SECRETS.upstash,
    port: stack.redisLayer.port,
  })
  cleanup.addStoppable('redis layer (restarted)', stack.redisLayer)

  // The origin and the Upstash stand-in on their own ------------------------------------------
  const originFresh = factory.fresh(pool)
  await run({
    id: `origin-insert@${c50}`,
    scenario: 'baseline: origin insert path',
    kind: 'baseline',
    target: ORIGIN_DIRECT,
    url: stack.origin.url,
    concurrency: c50,
    requests: await signOriginRequests(originFresh),
    events: originFresh,
    fresh: 'all',
  })
  await run({
    id: `origin-replay@${c50}`,
    scenario: 'baseline: origin duplicate path',
    kind: 'baseline',
    target: ORIGIN_DIRECT,
    url: stack.origin.url,
    concurrency: c50,
    requests: await signOriginRequests(replays(seen, pool)),
    events: replays(seen, pool),
    fresh: 'none',
  })
  await run({
    id: `upstash-set-nx@${c50}`,
    scenario: 'baseline: claim via Upstash REST',
    kind: 'baseline',
    target: UPSTASH_DIRECT,
    url: stack.redisLayer.url,
    concurrency: c50,
    // Cheap to build and fast to answer: a larger pool, so the step runs its full duration.
    requests: upstashRequests(prefix, 4 * pool),
    events: [],
    fresh: 'none',
    touchesDatabase: false,
  })

  if (workerProfiler && profileDir) {
    await workerProfiler.stop(join(profileDir, WORKERD_PROFILE))
  }

  // wrangler dev: the same scenarios through its development proxy -----------------------------
  const devNeedsS = WRANGLER_DEV_OVERHEAD_S + 2 * (config.durationS + 4)
  const leftS = config.budgetS - (Date.now() - startedAt) / 1000
  if (config.wranglerDev && leftS < devNeedsS) {
    notes.push(
      `wrangler dev steps skipped: ${fmt(leftS)} s left of the ${config.budgetS} s budget, they need ` +
        `about ${devNeedsS} s (BENCH_BUDGET_S raises it)`,
    )
    say(notes[notes.length - 1] as string)
  } else if (config.wranglerDev) {
    say('starting wrangler dev (its dev proxy caps throughput; labelled as such)')
    dev = await startWorkerDev({ vars: stack.gatewayVars, onLine: (line) => tally.observe(line) })
    const devHandle = dev
    cleanup.add('wrangler dev', () => devHandle.stop())
    await warmUp(load, dev.url, await signVendorRequests(factory.fresh(config.warmupRequests / 2)))
    const devUrl = dev.url
    await run(
      await firstSeen(
        `first-seen-wrangler-dev@${c50}`,
        'first-seen (wrangler dev)',
        GATEWAY_DEV,
        devUrl,
        c50,
        `first-seen@${c50}`,
      ),
    )
    await run(
      await storm(
        `duplicate-storm-wrangler-dev@${c50}`,
        'duplicate storm (wrangler dev)',
        GATEWAY_DEV,
        devUrl,
        c50,
        `duplicate-storm@${c50}`,
      ),
    )
    await dev.stop()
    dev = undefined
  }

  const finalSteps = withRatios(steps)
  return {
    machine,
    config: {
      durationS: config.durationS,
      sweep: config.sweep,
      headlineConcurrency: c50,
      maxRequestsPerStep: pool,
      seedEvents: config.seedEvents,
      originLogLevel: config.originLogLevel,
      runTag: tag,
    },
    steps: finalSteps,
    redisBenchmark: redisBaseline,
    memory,
    targets: judgeTargets(finalSteps, memory, c50),
    checks: finalSteps.flatMap((s) => s.checks.map((c) => ({ ...c, step: s.id }))),
    elapsedS: 0,
    problems,
    notes,
  }
}

function chartFor(report: BenchReport, config: BenchConfig): string {
  const series = (id: string, label: string, color: string, dashed = false) => {
    const points = config.sweep
      .map((c) => report.steps.find((s) => s.id === `${id}@${c}`))
      .filter((s): s is StepResult => s !== undefined)
    return {
      label,
      color,
      dashed,
      throughput: points.map((s) => [s.concurrency, s.eventsPerS] as [number, number]),
      p99: points.map((s) => [s.concurrency, s.latency.p99] as [number, number]),
    }
  }
  const m = report.machine
  return renderChart({
    title: 'inbound-dedup gateway: throughput and p99 against concurrency',
    subtitle: `${m.nproc} cores, ${m.cpuModel}, Node ${m.node}, ${m.date.slice(0, 10)}; load avg at start ${m.loadAverageStart[0]}`,
    concurrencies: config.sweep,
    series: [
      series('first-seen', 'first-seen (gateway)', '#1f77b4'),
      series('duplicate-storm', 'duplicate storm (gateway)', '#ff7f0e'),
      series('verify-only', 'verify-only baseline', '#7f7f7f', true),
    ],
  })
}

function writeResults(report: BenchReport, config: BenchConfig): void {
  mkdirSync(RESULTS_DIR, { recursive: true })
  writeFileSync(join(RESULTS_DIR, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`)
  writeFileSync(join(RESULTS_DIR, 'latest.md'), markdown(report, config.headlineConcurrency))
  writeFileSync(join(RESULTS_DIR, 'chart.svg'), chartFor(report, config))
}

async function main(): Promise<number> {
  const config = loadBenchConfig()
  const machine = machineInfo()
  const tally = new LogTally()
  const cleanup = new Cleanup()
  const problems: string[] = []
  // workerd's output reaches this process as console.log lines: count them, do not print them.
  const restoreConsole = captureConsoleLines((line) => tally.observe(line))
  let interrupted = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) process.exit(130)
    interrupted = true
    say(`${signal}: cleaning up (again to quit at once)`)
    void cleanup.runAll(problems).finally(() => process.exit(130))
  }
  signalHandler = onSignal
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  let report: BenchReport | undefined
  let failure: unknown
  try {
    report = await bench(config, machine, tally, cleanup, problems)
  } catch (err) {
    failure = err
  }
  if (!interrupted) say('cleaning up: processes, database, Redis keys')
  await cleanup.runAll(problems)
  restoreConsole()
  if (interrupted) {
    for (const problem of problems) process.stderr.write(`- ${problem}\n`)
    return 130
  }
  if (failure !== undefined || !report) {
    process.stderr.write(`\nbench FAILED: ${(failure as Error)?.stack ?? String(failure)}\n`)
    for (const problem of problems) process.stderr.write(`- ${problem}\n`)
    return 1
  }

  machine.loadAverageEnd = loadavg().map((l) => round(l, 2))
  report.elapsedS = round((Date.now() - startedAt) / 1000, 0)
  if (config.profile) {
    const dir = join(RESULTS_DIR, 'profiles', config.runTag)
    const origin = largestProfile(dir, (name) => name !== WORKERD_PROFILE)
    const workerd = largestProfile(dir, (name) => name === WORKERD_PROFILE)
    report.profiles = [
      ...(origin ? [{ label: 'origin (Node)', ...summarizeProfile(origin) }] : []),
      ...(workerd ? [{ label: 'gateway (workerd)', ...summarizeProfile(workerd) }] : []),
    ]
    if (!origin) problems.push('BENCH_PROFILE=1 but the origin wrote no .cpuprofile')
    if (!workerd) problems.push('BENCH_PROFILE=1 but no workerd profile was taken')
  }
  writeResults(report, config)

  const failed = report.checks.filter((c) => !c.ok)
  process.stdout.write(
    [
      '',
      `Machine: ${machine.nproc} cores, ${machine.cpuModel}, Node ${machine.node}, ${machine.date}`,
      `Load average at start ${machine.loadAverageStart.join(' / ')}, at end ${machine.loadAverageEnd.join(' / ')}`,
      '',
      resultsTable(report),
      '',
      'Targets (issue 6):',
      targetsList(report),
      '',
      `CPU ms per 1,000 requests (c=${config.headlineConcurrency}):`,
      cpuTable(report, config.headlineConcurrency),
      '',
      failed.length === 0
        ? `Correctness: all ${report.checks.length} checks passed.`
        : `Correctness: ${failed.length} FAILED:\n${failed.map((c) => `- ${c.step}: ${c.name}: ${c.detail}`).join('\n')}`,
      ...(report.notes.length ? ['', 'Notes:', ...report.notes.map((n) => `- ${n}`)] : []),
      ...(problems.length ? ['', 'Problems:', ...problems.map((p) => `- ${p}`)] : []),
      '',
      `Wrote bench/results/latest.json, latest.md, chart.svg in ${report.elapsedS} s.`,
      '',
    ].join('\n'),
  )
  return failed.length > 0 || problems.length > 0 ? 1 : 0
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench crashed: ${(err as Error)?.stack ?? String(err)}\n`)
    process.exit(1)
  },
)
