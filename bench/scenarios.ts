/**
 * What the benchmark measures, in the order it runs: a table of phases, each a list of scenarios
 * run at every concurrency of the sweep or at the headline one. A scenario names its target, its
 * traffic and the baseline it is compared with; bench/runner.ts turns each into a step
 * (bench/steps.ts) and does what a phase needs around it (Redis stopped, `wrangler dev` started).
 *
 *   [the Worker's capacity on the queue path, when a phase below sets its rates from it] →
 *   sweep: verify-only, duplicate storm and first-seen side by side at each concurrency →
 *   the storm again with the in-isolate memo on (a second gateway, labelled) → mixed 1:7 →
 *   Slack backfill (open loop at that capacity) → Redis down (the stand-in stopped, Postgres decides)
 *   → the origin, a raw INSERT and the Upstash stand-in on their own (and the origin against the raw
 *   INSERT in alternated slices) → the cost per event (bench/cost.ts) → the decision counters'
 *   cost per decision in workerd (bench/decision-counters-phase.ts) → each channel's worst
 *   unauthenticated request, refused before its signature holds (bench/pre-verification-phase.ts)
 *   → [the connection registry with 1 and 100,000 connections in KV, only when BENCH_PHASES names
 *   it: bench/connections-phase.ts] → overload (the origin limited to a tenth of an open-loop backfill: shedding off and on, batched and single drain;
 *   bench/overload.ts) → admission (the Worker offered 2× its capacity, its in-flight bound on and
 *   off; bench/admission.ts) → queue (the spool consumer's drain per batch size; bench/queue-drain.ts) →
 *   `wrangler dev` first-seen and storm.
 * @module
 */
import type { StepKind } from './steps'

export type Target =
  | 'gateway'
  | 'memoGateway'
  | 'countersOnGateway'
  | 'countersOffGateway'
  | 'verifyOnly'
  | 'origin'
  | 'rawInsert'
  | 'upstash'
  | 'wranglerDev'

/** How each target is named in the results. */
export const TARGET_LABELS: Record<Target, string> = {
  gateway: 'gateway (Miniflare)',
  memoGateway: 'gateway, memo on (Miniflare)',
  countersOnGateway: 'gateway, counters on, fresh (Miniflare)',
  countersOffGateway: 'gateway, DECISION_FLUSH_SECONDS=0, fresh (Miniflare)',
  wranglerDev: 'gateway (wrangler dev)',
  verifyOnly: 'verify-only (Miniflare)',
  origin: 'origin (direct)',
  rawInsert: 'raw INSERT (same driver and proxy)',
  upstash: 'Upstash stand-in (direct)',
}

/**
 * `new`: every request a new event; `replays`: every request an acknowledged seed event again
 * (Slack's re-signed, as its retries are); `mixed`: 1 new : {@link MIXED_REPLAYS} replays;
 * `setNx`: Upstash REST claims (SET NX PX GET), no events; `newSlack`: every request a new Slack
 * event (a backfill).
 */
export type Traffic = 'new' | 'newSlack' | 'replays' | 'mixed' | 'setNx'

/** Replays per new event in the mixed scenario (Twilio-style retries). */
export const MIXED_REPLAYS = 7

export interface Scenario {
  /** The step id before `@{concurrency}`: `first-seen` → `first-seen@50`. */
  name: string
  label: string
  kind: StepKind
  target: Target
  traffic: Traffic
  /** Compared with this scenario's step at the same concurrency, or at the headline one. */
  baseline?: { name: string; at: 'same' | 'headline' }
  /** Verify-only and the Upstash stand-in never reach Postgres: there are no rows to check. */
  touchesDatabase?: false
  /** Seconds, when shorter than the run's step duration (BENCH_DURATION_S) is enough. */
  durationS?: number
  /**
   * Open loop at the run's backfill rate (the capacity the run measured first, or
   * BENCH_BACKFILL_RATE) for its backfill duration (BENCH_BACKFILL_S), instead of a closed loop
   * at a concurrency.
   */
  openLoop?: true
}

export type PhaseName =
  | 'sweep'
  | 'memo'
  | 'mixed'
  | 'backfill'
  | 'redis-down'
  | 'direct'
  | 'wrangler-dev'
  | 'overload'
  | 'admission'
  | 'queue'
  | 'decision-counters'
  | 'pre-verification'
  | 'cost'
  | 'connections'

export interface Phase {
  name: PhaseName
  /** Every concurrency of BENCH_SWEEP, or the headline concurrency only. */
  at: 'sweep' | 'headline'
  scenarios: readonly Scenario[]
  /**
   * Its open-loop rates are shares of the Worker's capacity (bench/capacity.ts), which the run
   * then measures before its first phase.
   */
  ratesFromCapacity?: true
  /** Longer than a default run affords: runs only when BENCH_PHASES names it. */
  optIn?: true
}

/** Seconds of each step of the counters' A/B: two rounds of two, a few seconds in all. */
const COUNTERS_AB_S = 2

function counterStorm(target: Target, name: string, label: string): Scenario {
  return { name, label, kind: 'scenario', target, traffic: 'replays', durationS: COUNTERS_AB_S }
}

export const PHASES: readonly Phase[] = [
  {
    name: 'sweep',
    at: 'sweep',
    scenarios: [
      {
        name: 'verify-only',
        label: 'baseline: verify-only',
        kind: 'baseline',
        target: 'verifyOnly',
        traffic: 'replays',
        touchesDatabase: false,
      },
      {
        name: 'duplicate-storm',
        label: 'duplicate storm',
        kind: 'scenario',
        target: 'gateway',
        traffic: 'replays',
        baseline: { name: 'verify-only', at: 'same' },
      },
      {
        name: 'first-seen',
        label: 'first-seen',
        kind: 'scenario',
        target: 'gateway',
        traffic: 'new',
        baseline: { name: 'origin-insert', at: 'headline' },
      },
    ],
  },
  {
    // The labelled second figure: not the target's (a vendor's retries land on other isolates).
    name: 'memo',
    at: 'headline',
    scenarios: [
      {
        name: 'duplicate-storm-memo',
        label: 'duplicate storm, in-isolate memo on (one isolate: flattering)',
        kind: 'scenario',
        target: 'memoGateway',
        traffic: 'replays',
        baseline: { name: 'verify-only', at: 'headline' },
      },
    ],
  },
  {
    name: 'mixed',
    at: 'headline',
    scenarios: [
      {
        name: 'mixed',
        label: `mixed 1 new : ${MIXED_REPLAYS} replays`,
        kind: 'scenario',
        target: 'gateway',
        traffic: 'mixed',
        baseline: { name: 'verify-only', at: 'headline' },
      },
    ],
  },
  {
    name: 'backfill',
    at: 'headline',
    ratesFromCapacity: true,
    scenarios: [
      {
        name: 'slack-backfill',
        label: 'Slack backfill (open loop)',
        kind: 'scenario',
        target: 'gateway',
        traffic: 'newSlack',
        openLoop: true,
      },
    ],
  },
  {
    name: 'redis-down',
    at: 'headline',
    scenarios: [
      {
        name: 'redis-down',
        label: 'Redis down (replays)',
        kind: 'scenario',
        target: 'gateway',
        traffic: 'replays',
        baseline: { name: 'origin-replay', at: 'headline' },
      },
    ],
  },
  {
    name: 'direct',
    at: 'headline',
    scenarios: [
      {
        name: 'origin-insert',
        label: 'baseline: origin insert path',
        kind: 'baseline',
        target: 'origin',
        traffic: 'new',
        baseline: { name: 'raw-insert', at: 'same' },
      },
      {
        name: 'raw-insert',
        label: 'baseline: raw one-statement INSERT',
        kind: 'baseline',
        target: 'rawInsert',
        traffic: 'new',
        // Its rows go to a table of its own, not messages.
        touchesDatabase: false,
      },
      {
        name: 'origin-replay',
        label: 'baseline: origin duplicate path',
        kind: 'baseline',
        target: 'origin',
        traffic: 'replays',
      },
      {
        name: 'upstash-set-nx',
        label: 'baseline: claim via Upstash REST',
        kind: 'baseline',
        target: 'upstash',
        traffic: 'setNx',
        touchesDatabase: false,
      },
    ],
  },
  {
    // Runs apart (bench/cost.ts): per event, what the platforms count and bill, three windows.
    name: 'cost',
    at: 'headline',
    scenarios: [],
  },
  {
    // First the loop in workerd (bench/decision-counters-phase.ts), then this A/B: the storm on
    // two fresh gateways alike but for the counters (on, off), alternated twice.
    name: 'decision-counters',
    at: 'headline',
    scenarios: [1, 2].flatMap((round) => [
      counterStorm(
        'countersOnGateway',
        `storm-counters-on-${round}`,
        `duplicate storm, counters on (${round})`,
      ),
      counterStorm(
        'countersOffGateway',
        `storm-counters-off-${round}`,
        `duplicate storm, counters off (${round})`,
      ),
    ]),
  },
  {
    // Runs apart from this table (bench/pre-verification-phase.ts): a gateway of its own, each
    // channel's worst forged request against its smallest.
    name: 'pre-verification',
    at: 'headline',
    scenarios: [],
  },
  {
    // Runs apart from this table (bench/connections-phase.ts): verify-only Workers of its own
    // with 1 and 100,000 connections in KV. About 3 minutes here, most of it the fill: opt-in.
    name: 'connections',
    at: 'headline',
    optIn: true,
    scenarios: [],
  },
  {
    // Runs apart from this table (bench/overload.ts): workers of its own, a slow origin.
    name: 'overload',
    at: 'headline',
    ratesFromCapacity: true,
    scenarios: [],
  },
  {
    // Runs apart too (bench/admission.ts): the Worker offered 2× its capacity, its gate on and off.
    name: 'admission',
    at: 'headline',
    ratesFromCapacity: true,
    scenarios: [],
  },
  {
    // Runs apart too (bench/queue-drain.ts): the spool consumer's drain per queue batch size.
    name: 'queue',
    at: 'headline',
    ratesFromCapacity: true,
    scenarios: [],
  },
  {
    name: 'wrangler-dev',
    at: 'headline',
    scenarios: [
      {
        name: 'first-seen-wrangler-dev',
        label: 'first-seen (wrangler dev)',
        kind: 'scenario',
        target: 'wranglerDev',
        traffic: 'new',
        baseline: { name: 'first-seen', at: 'headline' },
      },
      {
        name: 'duplicate-storm-wrangler-dev',
        label: 'duplicate storm (wrangler dev)',
        kind: 'scenario',
        target: 'wranglerDev',
        traffic: 'replays',
        baseline: { name: 'duplicate-storm', at: 'headline' },
      },
    ],
  },
]

/** `name@c`: a step's id. */
export function stepId(name: string, concurrency: number): string {
  return `${name}@${concurrency}`
}

/** The id of the step `scenario` is compared with, when it has one. */
export function baselineId(scenario: Scenario, c: number, headline: number): string | undefined {
  const { baseline } = scenario
  if (!baseline) return undefined
  return stepId(baseline.name, baseline.at === 'same' ? c : headline)
}
