/**
 * Runs the scenario table (bench/scenarios.ts) on a started run: each phase at its
 * concurrencies, with what it needs around it (the Upstash stand-in stopped and restarted for
 * Redis down, the workerd profile taken after the direct baselines, `wrangler dev` started and
 * stopped, or skipped when the time budget is short), each scenario turned into a step.
 * @module
 */
import { join } from 'node:path'
import type { Redis } from 'ioredis'
import type { WorkerDevHandle } from '../local/worker-runtime'
import type { Cleanup } from './cleanup'
import { type BenchConfig, vendorVars, WORKERD_PROFILE } from './config'
import { type DecisionCountersCost, measureDecisionCounters } from './decision-counters-phase'
import type { LoadGenerator } from './load'
import type { LogTally } from './logs'
import { type OverloadReport, runOverload, writeOverloadJson } from './overload'
import {
  describePreVerification,
  measurePreVerification,
  type PreVerificationCost,
} from './pre-verification-phase'
import { drainLines, measureQueueDrain, type QueueDrainReport } from './queue-drain'
import type { MachineInfo } from './report'
import {
  type EventFactory,
  mixed,
  replays,
  signOriginRequests,
  signVendorRequests,
  upstashRequests,
  type VendorEvent,
  type WireRequest,
} from './requests'
import {
  baselineId,
  MIXED_REPLAYS,
  type Phase,
  type PhaseName,
  type Scenario,
  stepId,
  TARGET_LABELS,
  type Target,
} from './scenarios'
import type { CountersAb, Stack } from './stack'
import type { StepOutcome, StepResult, StepSpec } from './steps'
import { fmt, say, startedAt } from './util'
import type { WorkerProfiler } from './worker-profiler'

const WARMUP_S = 2
/** What the `wrangler dev` section needs beyond its steps (start-up, warm-up), seconds. */
const WRANGLER_DEV_OVERHEAD_S = 20

export interface BenchRun {
  config: BenchConfig
  machine: MachineInfo
  tally: LogTally
  cleanup: Cleanup
  /** Cleanup failures and unsettled keys: they fail the run without stopping it. */
  problems: string[]
  /** The run's SIGINT / SIGTERM handler: once the stack is up, the only one. */
  onSignal: (signal: NodeJS.Signals) => void
}

/** What the phases share: the stack, the traffic sources, the steps measured so far. */
export interface RunState {
  run: BenchRun
  prefix: string
  /** The headline concurrency. */
  c50: number
  /** Requests per step. */
  pool: number
  stack: Stack
  load: LoadGenerator
  redis: Redis
  factory: EventFactory
  steps: StepResult[]
  notes: string[]
  step(spec: StepSpec): Promise<StepOutcome>
  dev: WorkerDevHandle | undefined
  profileDir: string | null
  workerProfiler: WorkerProfiler | undefined
  /** The overload phase's figures (bench/overload.ts), when it ran. */
  overload?: OverloadReport
  /** The queue phase's (bench/queue-drain.ts), when it ran. */
  queueDrain?: QueueDrainReport
  /** The decision counters' cost per decision in workerd (phase `decision-counters`). */
  decisionCounters?: DecisionCountersCost
  /** Each channel's worst forged request over its smallest (phase `pre-verification`). */
  preVerification?: PreVerificationCost[]
  /** The counters' A/B pair of gateways, during phase `decision-counters` only. */
  countersAb: CountersAb | undefined
}

/** Unmeasured traffic (JIT, connection pools, isolates): the pool, or 2 s, whichever ends first. */
export async function warmUp(
  load: LoadGenerator,
  url: string,
  requests: WireRequest[],
): Promise<void> {
  await load.run({ url, requests, connections: 10, durationS: WARMUP_S, timeoutS: 10 })
}

/** What a phase needs around its steps; `before` answering false skips the phase. */
interface PhaseHooks {
  /** `seen`: the replay set (acknowledged seed events). */
  before?(state: RunState, seen: VendorEvent[]): Promise<boolean>
  after?(state: RunState): Promise<void>
}

const PHASE_HOOKS: Partial<Record<PhaseName, PhaseHooks>> = {
  'redis-down': {
    async before(state) {
      say('stopping the Upstash stand-in: Redis down')
      await state.stack.redisLayer.stop()
      return true
    },
    async after(state) {
      // Back on the same port (the Worker's UPSTASH_REDIS_REST_URL), for what follows.
      await state.stack.redisLayer.start()
    },
  },
  direct: {
    async after(state) {
      if (state.workerProfiler && state.profileDir) {
        await state.workerProfiler.stop(join(state.profileDir, WORKERD_PROFILE))
        state.workerProfiler = undefined
      }
    },
  },
  'decision-counters': {
    async before(state, seen) {
      state.decisionCounters = await measureDecisionCounters(state.stack.verifyOnlyUrl)
      say('starting two gateways for the counters A/B: counters on, DECISION_FLUSH_SECONDS=0')
      const ab = await state.stack.startCountersAb()
      state.countersAb = ab
      // Warmed on the storm's own traffic, so the first round is not the JIT's.
      const warm = await signVendorRequests(replays(seen, state.run.config.warmupRequests))
      for (const url of [ab.onUrl, ab.offUrl]) await warmUp(state.load, url, warm)
      return true
    },
    async after(state) {
      await state.countersAb?.stop()
      state.countersAb = undefined
    },
  },
  overload: {
    async before(state) {
      await runOverload(state)
      return false
    },
  },
  'pre-verification': {
    async before(state) {
      const { local } = state.stack
      state.preVerification = await measurePreVerification(
        (vars) => local.startWorker({ vars }),
        vendorVars(),
      )
      const lines = state.preVerification.map(describePreVerification)
      state.notes.push(...lines.map((line) => `before the signature: ${line}`))
      return false
    },
  },
  queue: {
    async before(state) {
      state.queueDrain = await measureQueueDrain(state)
      writeOverloadJson(state)
      state.notes.push(...drainLines(state.queueDrain))
      return false
    },
  },
  'wrangler-dev': {
    async before(state) {
      const { config, tally } = state.run
      if (!config.wranglerDev) return false
      const devNeedsS = WRANGLER_DEV_OVERHEAD_S + 2 * (config.durationS + 4)
      const leftS = config.budgetS - (Date.now() - startedAt) / 1000
      if (leftS < devNeedsS) {
        const note =
          `wrangler dev steps skipped: ${fmt(leftS)} s left of the ${config.budgetS} s budget, they need ` +
          `about ${devNeedsS} s (BENCH_BUDGET_S raises it)`
        state.notes.push(note)
        say(note)
        return false
      }
      say('starting wrangler dev (its dev proxy caps throughput; labelled as such)')
      // Stopped after its steps, or with the stack.
      const dev = await state.stack.startWorkerDev((line) => tally.observe(line))
      state.dev = dev
      const warm = await signVendorRequests(state.factory.fresh(config.warmupRequests / 2))
      await warmUp(state.load, dev.url, warm)
      return true
    },
    async after(state) {
      await state.dev?.stop()
      state.dev = undefined
    },
  },
}

export async function runPhase(state: RunState, phase: Phase, seen: VendorEvent[]): Promise<void> {
  const hooks = PHASE_HOOKS[phase.name]
  if (hooks?.before && !(await hooks.before(state, seen))) return
  const concurrencies = phase.at === 'sweep' ? state.run.config.sweep : [state.c50]
  for (const c of concurrencies) {
    for (const scenario of phase.scenarios) {
      await state.step(await stepSpec(state, scenario, c, seen))
    }
  }
  await hooks?.after?.(state)
}

async function stepSpec(
  state: RunState,
  scenario: Scenario,
  c: number,
  seen: VendorEvent[],
): Promise<StepSpec> {
  const traffic = await trafficOf(state, scenario, seen)
  const noRows = scenario.touchesDatabase === false
  const { backfillRatePerS, backfillDurationS } = state.run.config
  const open = scenario.openLoop
    ? { openLoop: { ratePerS: backfillRatePerS }, durationS: backfillDurationS }
    : {}
  return {
    // An open loop has a rate, not a concurrency.
    id: scenario.openLoop ? `${scenario.name}@${backfillRatePerS}/s` : stepId(scenario.name, c),
    scenario: scenario.label,
    kind: scenario.kind,
    target: TARGET_LABELS[scenario.target],
    url: urlOf(state, scenario.target),
    concurrency: scenario.openLoop ? 0 : c,
    ...(scenario.durationS
      ? { durationS: Math.min(scenario.durationS, state.run.config.durationS) }
      : {}),
    ...open,
    ...traffic,
    // Requests that are events but reach no database: nothing to check them against.
    ...(noRows ? { events: [], touchesDatabase: false } : {}),
    baselineId: baselineId(scenario, c, state.c50),
  }
}

function urlOf(state: RunState, target: Target): string {
  const { stack } = state
  switch (target) {
    case 'gateway':
      return stack.gatewayUrl
    case 'verifyOnly':
      return stack.verifyOnlyUrl
    case 'memoGateway':
      return stack.memoGatewayUrl
    case 'countersOnGateway':
    case 'countersOffGateway':
      if (!state.countersAb) throw new Error('the counters A/B gateways are not running')
      return target === 'countersOnGateway' ? state.countersAb.onUrl : state.countersAb.offUrl
    case 'origin':
      return stack.origin.url
    case 'rawInsert':
      return stack.rawInsert.url
    case 'upstash':
      return stack.redisLayer.url
    case 'wranglerDev':
      if (!state.dev) throw new Error('wrangler dev is not running')
      return state.dev.url
  }
}

/** A step's requests, the event behind each, and which of them are new. */
async function trafficOf(
  state: RunState,
  scenario: Scenario,
  seen: VendorEvent[],
): Promise<Pick<StepSpec, 'requests' | 'events' | 'fresh'>> {
  const { factory, pool } = state
  const direct = scenario.target === 'origin' || scenario.target === 'rawInsert'
  const sign = direct ? signOriginRequests : signVendorRequests
  switch (scenario.traffic) {
    case 'new': {
      const events = factory.fresh(pool)
      return { requests: await sign(events), events, fresh: 'all' }
    }
    case 'newSlack': {
      const { backfillRatePerS, backfillDurationS } = state.run.config
      const events = factory.freshSlack(backfillRatePerS * backfillDurationS)
      return { requests: await sign(events), events, fresh: 'all' }
    }
    case 'replays': {
      const events = replays(seen, pool)
      return { requests: await sign(events), events, fresh: 'none' }
    }
    case 'mixed': {
      const mix = mixed(factory, seen, pool, MIXED_REPLAYS)
      return { requests: await sign(mix.events), events: mix.events, fresh: mix.fresh }
    }
    case 'setNx':
      // Cheap to build and fast to answer: a larger pool, so the step runs its full duration.
      return { requests: upstashRequests(state.prefix, 4 * pool), events: [], fresh: 'none' }
  }
}
