/**
 * What the phases of a run share (RunState: the stack, the traffic sources, the steps so far, the
 * figures of the measurements), and how a scenario of the table (bench/scenarios.ts) becomes a
 * step: its target's URL, its requests, which of them are new events. bench/phase-run.ts runs
 * the phases.
 * @module
 */
import type { Redis } from 'ioredis'
import type pg from 'pg'
import type { WorkerDevHandle } from '../local/worker-runtime'
import type { AdmissionReport } from './admission'
import { type CapacityReport, rateFromCapacity } from './capacity-figures'
import type { Cleanup } from './cleanup'
import type { BenchConfig } from './config'
import type { ConnectionsReport } from './connections-phase'
import type { CostReport } from './cost'
import type { DecisionCountersCost } from './decision-counters-phase'
import type { InsertRatio } from './insert-ratio'
import type { LateRows } from './late-rows'
import type { LoadGenerator } from './load'
import type { LogTally } from './logs'
import type { OverloadReport } from './overload'
import type { PreVerificationCost } from './pre-verification-phase'
import type { QueueDrainReport } from './queue-drain'
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
import type { RunDeps } from './run-deps'
import {
  baselineId,
  MIXED_REPLAYS,
  type Scenario,
  stepId,
  TARGET_LABELS,
  type Target,
} from './scenarios'
import type { CountersAb, Stack } from './stack'
import type { StepOutcome, StepResult, StepSpec } from './steps'
import type { WorkerProfiler } from './worker-profiler'

const WARMUP_S = 2

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
export interface RunState extends RunDeps {
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
  /** Steps whose rows were late for their check, checked again at the run's end. */
  lateRows: LateRows
  /** The bench's own pool on the run's database. */
  sql: pg.Pool
  /** Runs a step of the results table. */
  step(spec: StepSpec): Promise<StepOutcome>
  dev: WorkerDevHandle | undefined
  profileDir: string | null
  workerProfiler: WorkerProfiler | undefined
  /**
   * What the Worker alone sustains on the queue path (bench/capacity.ts), measured before the
   * first phase whose open-loop rates are set from it.
   */
  capacity?: CapacityReport
  /** The origin against the raw INSERT in alternated slices (phase `direct`). */
  insertRatio?: InsertRatio
  /** What an event costs the platforms (phase `cost`). */
  cost?: CostReport
  /** The overload phase's figures (bench/overload.ts), when it ran. */
  overload?: OverloadReport
  /** The admission phase's (bench/admission.ts), when it ran. */
  admission?: AdmissionReport
  /** The queue phase's (bench/queue-drain.ts), when it ran. */
  queueDrain?: QueueDrainReport
  /** The decision counters' cost per decision in workerd (phase `decision-counters`). */
  decisionCounters?: DecisionCountersCost
  /** Each channel's worst forged request over its smallest (phase `pre-verification`). */
  preVerification?: PreVerificationCost[]
  /** Verification with 1 and 100,000 connections in KV (phase `connections`). */
  connections?: ConnectionsReport
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

export async function stepSpec(
  state: RunState,
  scenario: Scenario,
  c: number,
  seen: VendorEvent[],
): Promise<StepSpec> {
  const traffic = await trafficOf(state, scenario, seen)
  const noRows = scenario.touchesDatabase === false
  const ratePerS = backfillRate(state)
  const open = scenario.openLoop
    ? { openLoop: { ratePerS }, durationS: state.run.config.backfillDurationS }
    : {}
  return {
    // An open loop has a rate, not a concurrency.
    id: scenario.openLoop ? `${scenario.name}@${ratePerS}/s` : stepId(scenario.name, c),
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

/** The slowest backfill worth sending; also what it runs at when no capacity was measured. */
const MIN_BACKFILL_RATE = 20

/** The backfill's rate: BENCH_BACKFILL_RATE, else the capacity the run measured first. */
export function backfillRate(state: RunState): number {
  return (
    state.run.config.backfillRatePerS ??
    rateFromCapacity(state.capacity, 1, { min: MIN_BACKFILL_RATE })
  )
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
      const events = factory.freshSlack(backfillRate(state) * state.run.config.backfillDurationS)
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
