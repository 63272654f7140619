/**
 * One bench run: a fresh database and key prefix, the stack (bench/stack.ts), the load generator
 * and the CPU sampler; then warm-up → redis-benchmark (SET NX PX GET) → seed (new events: the
 * replay set and the Redis memory sample) → every phase of the scenario table (bench/scenarios.ts)
 * with what each needs around it → the report. Everything started is handed to the cleanup.
 * @module
 */
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { childrenOf, groupPids, readStat } from '../local/proc'
import { assertServicesUp, createTestDatabase, databasePool, REDIS_URL } from '../local/services'
import { REPO_ROOT } from '../local/stack'
import { claimSignals } from './cleanup'
import { RESULTS_DIR, WORKERD_PROFILE } from './config'
import { CpuSampler } from './cpu'
import { LoadGenerator } from './load'
import { type BenchRun, type RunState, runPhase, warmUp } from './phases'
import {
  countDedupKeys,
  redisBenchmark,
  sampleKeyMemory,
  usedMemory,
  waitForSettledKeys,
} from './redis'
import type { BenchReport, MemoryReport } from './report'
import { judgeOverloadTargets, judgeTargets } from './report'
import { EventFactory, signOriginRequests, signVendorRequests, type VendorEvent } from './requests'
import { PHASES, type Phase, stepId, TARGET_LABELS } from './scenarios'
import { startBenchStack } from './stack'
import { runStep, type StepContext, type StepResult } from './steps'
import { fmt, round, say } from './util'
import { WorkerProfiler } from './worker-profiler'

/** The seed step sends its events, or stops after this long (a busy machine is slow). */
const SEED_MAX_S = 8

export async function bench(run: BenchRun): Promise<BenchReport> {
  const state = await openRun(run)
  await warmUpAll(state)
  const redisBaseline = await redisAlone(state)
  const { seen, memory } = await seedReplaySet(state)
  for (const phase of phasesToRun(state)) await runPhase(state, phase, seen)
  await stopWholeRunProfile(state)
  const steps = withRatios(state.steps)
  const { config, machine, problems } = run
  return {
    machine,
    config: {
      durationS: config.durationS,
      sweep: config.sweep,
      headlineConcurrency: state.c50,
      backfillRatePerS: config.backfillRatePerS,
      backfillDurationS: config.backfillDurationS,
      maxRequestsPerStep: state.pool,
      seedEvents: config.seedEvents,
      originLogLevel: config.originLogLevel,
      runTag: config.runTag,
    },
    steps,
    redisBenchmark: redisBaseline,
    memory,
    targets: judgeTargets(steps, memory, state.c50),
    overloadTargets: judgeOverloadTargets(state.overload),
    ...(state.overload ? { overload: state.overload } : {}),
    ...(state.queueDrain ? { queueDrain: state.queueDrain } : {}),
    ...(state.decisionCounters ? { decisionCounters: state.decisionCounters } : {}),
    ...(state.preVerification ? { preVerification: state.preVerification } : {}),
    checks: steps.flatMap((s) => s.checks.map((c) => ({ ...c, step: s.id }))),
    elapsedS: 0,
    problems,
    notes: state.notes,
  }
}

/** The database, the key prefix, the stack, the load generator and the sampler, all cleaned up. */
async function openRun(run: BenchRun): Promise<RunState> {
  const { config, cleanup, machine } = run
  const tag = config.runTag
  const prefix = `bench:${tag}:`
  say(`run ${tag}: ${config.durationS} s per step, sweep c=${config.sweep.join(',')}`)
  await assertServicesUp()
  const db = await createTestDatabase(`bench_${tag}`)
  cleanup.add('drop database', () => db.drop())
  say(`database ${db.name} created and migrated; Redis key prefix ${prefix}`)

  const profileDir = config.profile ? join(RESULTS_DIR, 'profiles', tag) : null
  if (profileDir) mkdirSync(profileDir, { recursive: true })
  const stack = await startBenchStack({
    config,
    databaseUrl: db.url,
    prefix,
    tally: run.tally,
    cleanup,
    profileDir,
  })
  claimSignals(run.onSignal)
  say(
    `stack up: gateway ${stack.gatewayUrl}, verify-only ${stack.verifyOnlyUrl}, origin ${stack.origin.url}`,
  )

  const load = await LoadGenerator.start()
  cleanup.add('load generator', () => load.stop())
  const sql = databasePool(db.url)
  cleanup.add('bench pg pool', () => sql.end())
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1, connectTimeout: 3_000 })
  redis.on('error', () => {})
  cleanup.add('bench redis client', async () => redis.disconnect())

  const serverInfo = await redis.info('server')
  machine.redisVersion = /redis_version:(\S+)/.exec(serverInfo)?.[1]
  machine.postgresVersion = (
    await sql.query<{ v: string }>("SELECT current_setting('server_version') AS v")
  ).rows[0]?.v
  machine.wrangler = packageVersion('wrangler')
  machine.miniflare = packageVersion('miniflare')
  const redisPid = Number(/process_id:(\d+)/.exec(serverInfo)?.[1] ?? 0)
  // The bench's own backend's parent. Postgres on this machine only: elsewhere it reads as none.
  let postmaster: number | null | undefined
  const postmasterPid = async (): Promise<number | null> => {
    if (postmaster !== undefined) return postmaster
    const backend = (await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]
    postmaster = backend ? (readStat(backend.pid)?.ppid ?? null) : null
    return postmaster
  }

  // The sampler reads `state.dev` when it samples, after `state` exists.
  const sampler = new CpuSampler([
    { name: 'workerd', pids: () => stack.workerdPids },
    { name: 'wrangler dev', pids: () => (state.dev ? groupPids(state.dev.pid) : []) },
    { name: 'origin', pids: () => (stack.origin.running ? groupPids(stack.origin.pid) : []) },
    { name: 'raw insert server', pids: () => [stack.rawInsert.pid] },
    // Every process of the Postgres server, and through its postmaster the backends that exited
    // during a step: a client that hangs up mid-statement has its connection cut (origin/db/pool.ts
    // lease), so a step's end takes backends with it, and their CPU with them.
    {
      name: 'postgres',
      pids: async () => {
        const postmaster = await postmasterPid()
        return postmaster ? [postmaster, ...childrenOf(postmaster)] : []
      },
      reaper: () => postmasterPid(),
    },
    { name: 'redis-server', pids: () => (redisPid ? [redisPid] : []) },
    { name: 'bench (stand-in, neon proxy)', pids: () => [process.pid] },
    { name: 'load generator', pids: () => (load.pid ? [load.pid] : []) },
  ])
  const ctx: StepContext = {
    load,
    sql,
    sampler,
    tally: run.tally,
    durationS: config.durationS,
    timeoutS: 10,
    freshOwners: new Map(),
  }
  const state: RunState = {
    run,
    prefix,
    c50: config.headlineConcurrency,
    pool: config.maxRequestsPerStep,
    stack,
    load,
    redis,
    factory: new EventFactory(tag),
    steps: [],
    notes: [],
    async step(spec) {
      const profiled = profileDir && config.profileStep === spec.id && stack.gatewayInspectorUrl
      const profiler = profiled ? await WorkerProfiler.start(profiled) : undefined
      const outcome = await runStep(ctx, spec)
      if (profiler && profileDir) await profiler.stop(join(profileDir, WORKERD_PROFILE))
      state.steps.push(outcome.result)
      sayStep(outcome.result)
      return outcome
    },
    dev: undefined,
    countersAb: undefined,
    profileDir,
    workerProfiler: undefined,
  }
  return state
}

function sayStep(step: StepResult): void {
  const failed = step.checks.filter((c) => !c.ok)
  say(
    `${step.id.padEnd(34)} ${fmt(step.eventsPerS).padStart(6)} events/s  p50 ${fmt(step.latency.p50, 1)}  ` +
      `p95 ${fmt(step.latency.p95, 1)}  p99 ${fmt(step.latency.p99, 1)} ms  non-2xx ${step.non2xx}  ` +
      `errors ${step.errors}${step.rowsCreated === null ? '' : `  rows ${step.rowsCreated}`}` +
      `${failed.length ? `  CHECK FAILED: ${failed.map((c) => c.name).join('; ')}` : ''}`,
  )
}

function packageVersion(name: string): string | undefined {
  try {
    const file = join(REPO_ROOT, 'node_modules', name, 'package.json')
    return (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version
  } catch {
    return undefined
  }
}

async function warmUpAll(state: RunState): Promise<void> {
  const { load, stack, factory } = state
  const { warmupRequests } = state.run.config
  say('warming up the gateway, verify-only worker and origin')
  await warmUp(load, stack.gatewayUrl, await signVendorRequests(factory.fresh(warmupRequests)))
  await warmUp(load, stack.verifyOnlyUrl, await signVendorRequests(factory.fresh(warmupRequests)))
  await warmUp(load, stack.memoGatewayUrl, await signVendorRequests(factory.fresh(warmupRequests)))
  await warmUp(load, stack.origin.url, await signOriginRequests(factory.fresh(warmupRequests / 2)))
  await waitForSettledKeys(state.redis, state.prefix, 10_000)
  // One step's profile (BENCH_PROFILE_STEP) is taken around that step alone (openRun's step).
  state.workerProfiler =
    stack.gatewayInspectorUrl && !state.run.config.profileStep
      ? await WorkerProfiler.start(stack.gatewayInspectorUrl)
      : undefined
}

/** The phases BENCH_PHASES names (all by default); a skipped phase is a note in the report. */
function phasesToRun(state: RunState): Phase[] {
  const wanted = state.run.config.phases
  if (!wanted) return [...PHASES]
  const unknown = wanted.filter((name) => !PHASES.some((p) => p.name === name))
  if (unknown.length) throw new Error(`BENCH_PHASES: unknown phase(s) ${unknown.join(', ')}`)
  const skipped = PHASES.filter((p) => !wanted.includes(p.name)).map((p) => p.name)
  if (skipped.length) state.notes.push(`phases skipped (BENCH_PHASES): ${skipped.join(', ')}`)
  return PHASES.filter((p) => wanted.includes(p.name))
}

/** The whole-run workerd profile ends after the direct phase; here when that phase was skipped. */
async function stopWholeRunProfile(state: RunState): Promise<void> {
  if (state.workerProfiler && state.profileDir) {
    await state.workerProfiler.stop(join(state.profileDir, WORKERD_PROFILE))
    state.workerProfiler = undefined
  }
}

/** Redis on its own: redis-benchmark straight at it. */
async function redisAlone(state: RunState) {
  say('redis-benchmark: SET NX PX GET straight at Redis')
  const { config } = state.run
  const result = await redisBenchmark(
    REDIS_URL,
    state.prefix,
    config.redisBenchmarkRequests,
    state.c50,
  )
  say(
    result.status === 'ok'
      ? `redis-benchmark ${fmt(result.rps)} requests/s, p99 ${result.p99} ms`
      : `redis-benchmark ${result.note}`,
  )
  return result
}

/** The replay set (acknowledged new events), and what each key costs in Redis. */
async function seedReplaySet(
  state: RunState,
): Promise<{ seen: VendorEvent[]; memory: MemoryReport }> {
  const { redis, prefix, c50 } = state
  const { config, problems } = state.run
  const keysBefore = await countDedupKeys(redis, prefix)
  const usedBefore = await usedMemory(redis)
  const seedEvents = state.factory.fresh(config.seedEvents)
  const seed = await state.step({
    id: 'seed',
    scenario: `seed: first-seen (≤ ${fmt(config.seedEvents)} events, ≤ ${SEED_MAX_S} s)`,
    kind: 'scenario',
    target: TARGET_LABELS.gateway,
    url: state.stack.gatewayUrl,
    concurrency: c50,
    requests: await signVendorRequests(seedEvents),
    events: seedEvents,
    fresh: 'all',
    baselineId: stepId('origin-insert', c50),
    durationS: SEED_MAX_S,
  })
  const stillInflight = await waitForSettledKeys(redis, prefix, 10_000)
  if (stillInflight > 0) problems.push(`${stillInflight} seed keys still inflight after 10 s`)
  const usedAfter = await usedMemory(redis)
  const keysCreated = (await countDedupKeys(redis, prefix)) - keysBefore
  const seen = seedEvents.filter((_, i) => {
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
  return { seen, memory }
}

function withRatios(steps: StepResult[]): StepResult[] {
  return steps.map((step) => {
    const base = step.baselineId ? steps.find((s) => s.id === step.baselineId) : undefined
    if (!base || base.eventsPerS === 0) return step
    return { ...step, ratio: round(step.eventsPerS / base.eventsPerS, 2) }
  })
}
