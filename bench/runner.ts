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
import { admissionChecks, admissionTargets } from './admission'
import { measureCapacity } from './capacity'
import { claimSignals } from './cleanup'
import { RESULTS_DIR, WORKERD_PROFILE } from './config'
import { CpuSampler } from './cpu'
import type { InsertRatio } from './insert-ratio'
import { LateRows } from './late-rows'
import { LoadGenerator } from './load'
import { runPhase } from './phase-run'
import type { BenchRun, RunState } from './phases'
import type { BenchReport } from './report'
import { judgeOverloadTargets, judgeTargets } from './report'
import { EventFactory } from './requests'
import { PHASES, type Phase } from './scenarios'
import { redisAlone, seedReplaySet, warmUpAll } from './seed'
import { startBenchStack } from './stack'
import { runStep, type StepContext, type StepResult } from './steps'
import { fmt, round, say } from './util'
import { WorkerProfiler } from './worker-profiler'

export async function bench(run: BenchRun): Promise<BenchReport> {
  const state = await openRun(run)
  await warmUpAll(state)
  const redisBaseline = await redisAlone(state)
  const { seen, memory } = await seedReplaySet(state)
  const phases = phasesToRun(state)
  if (phases.some((p) => p.ratesFromCapacity)) await capacityFirst(state)
  for (const phase of phases) await runPhase(state, phase, seen)
  await stopWholeRunProfile(state)
  for (const line of await state.lateRows.recheck(state.sql)) say(line)
  const steps = withRatios(state.steps)
  const { config, machine, problems } = run
  return {
    machine,
    config: {
      durationS: config.durationS,
      sweep: config.sweep,
      headlineConcurrency: state.c50,
      backfillRatePerS: config.backfillRatePerS ?? 'the capacity measured first',
      backfillDurationS: config.backfillDurationS,
      maxRequestsPerStep: state.pool,
      seedEvents: config.seedEvents,
      originLogLevel: config.originLogLevel,
      runTag: config.runTag,
    },
    steps,
    redisBenchmark: redisBaseline,
    memory,
    targets: judgeTargets(steps, memory, state.c50, state.insertRatio),
    overloadTargets: [
      ...judgeOverloadTargets(state.overload),
      ...admissionTargets(state.admission),
    ],
    ...(state.capacity ? { capacity: state.capacity } : {}),
    ...(state.insertRatio ? { insertRatio: withoutSlices(state.insertRatio) } : {}),
    ...(state.cost ? { cost: state.cost } : {}),
    ...(state.overload ? { overload: state.overload } : {}),
    ...(state.queueDrain ? { queueDrain: state.queueDrain } : {}),
    ...(state.admission ? { admission: state.admission } : {}),
    ...(state.decisionCounters ? { decisionCounters: state.decisionCounters } : {}),
    ...(state.preVerification ? { preVerification: state.preVerification } : {}),
    ...(state.connections ? { connections: state.connections } : {}),
    checks: [
      ...[...steps, ...(state.insertRatio?.slices ?? [])].flatMap((s) =>
        s.checks.map((c) => ({ ...c, step: s.id })),
      ),
      ...(state.cost?.windows ?? []).flatMap((w) =>
        w.checks.map((c) => ({ ...c, step: `cost: ${w.name}` })),
      ),
      ...admissionChecks(state.admission),
    ],
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
    config,
    steps: [],
    notes: [],
    lateRows: new LateRows(),
    sql,
    async step(spec) {
      const profiled = profileDir && config.profileStep === spec.id && stack.gatewayInspectorUrl
      const profiler = profiled ? await WorkerProfiler.start(profiled) : undefined
      const outcome = await runStep(ctx, spec)
      if (profiler && profileDir) await profiler.stop(join(profileDir, WORKERD_PROFILE))
      state.lateRows.add(outcome)
      state.steps.push(outcome.result)
      sayStep(outcome.result)
      return outcome
    },
    async measure(spec) {
      const outcome = await runStep(ctx, spec)
      state.lateRows.add(outcome)
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
      `${failed.length ? `  CHECK FAILED: ${failed.map((c) => c.name).join('; ')}` : ''}` +
      `${step.unfinished ? `  DID NOT FINISH: ${step.unfinished}` : ''}`,
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

/**
 * The Worker's capacity on the queue path, before the phases whose open-loop rates are shares of
 * it. Should it not be measurable (a Worker that would not start), those rates fall to their
 * minimums and the run says so.
 */
async function capacityFirst(state: RunState): Promise<void> {
  say('measuring the Worker alone on the queue path: every open-loop rate is set from it')
  try {
    await measureCapacity(state)
  } catch (err) {
    const line = `capacity not measured (${(err as Error).message}): open-loop rates at their minimums`
    say(line)
    state.run.problems.push(line)
  }
}

/**
 * The phases BENCH_PHASES names (by default all but the opt-in ones); a skipped phase is a note in
 * the report.
 */
function phasesToRun(state: RunState): Phase[] {
  const wanted = state.run.config.phases
  if (!wanted) {
    const optIn = PHASES.filter((p) => p.optIn).map((p) => p.name)
    if (optIn.length)
      state.notes.push(`phases run only when named (BENCH_PHASES): ${optIn.join(', ')}`)
    return PHASES.filter((p) => !p.optIn)
  }
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

function withoutSlices({ slices: _, ...ratio }: InsertRatio): Omit<InsertRatio, 'slices'> {
  return ratio
}

function withRatios(steps: StepResult[]): StepResult[] {
  return steps.map((step) => {
    const base = step.baselineId ? steps.find((s) => s.id === step.baselineId) : undefined
    if (!base || base.eventsPerS === 0) return step
    return { ...step, ratio: round(step.eventsPerS / base.eventsPerS, 2) }
  })
}
