/**
 * What a run reports: the targets judged against the measurements, the results table
 * (printed, and as Markdown for docs/benchmark.md), and the machine the numbers came from.
 * @module
 */

import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import type { AdmissionReport } from './admission'
import type { CapacityReport } from './capacity-figures'
import { type ConnectionsReport, connectionsLines } from './connection-figures'
import type { CostReport } from './cost'
import { costSection } from './cost-report'
import { type DecisionCountersCost, describeCost } from './decision-counters-phase'
import type { InsertRatio } from './insert-ratio'
import type { OverloadReport } from './overload'
import type { PreVerificationCost } from './pre-verification-phase'
import type { QueueDrainReport } from './queue-drain'
import type { KeyMemory, RedisBenchmarkResult } from './redis'
import {
  backfillSection,
  capacitySection,
  insertRatioSection,
  overloadSection,
} from './report-open-loop'
import type { Check, StepResult } from './steps'
import { notMeasured, type Target, targetsList } from './targets'
import { fmt, round } from './util'

export interface MachineInfo {
  date: string
  nproc: number
  cpuModel: string
  memoryGiB: number
  node: string
  platform: string
  loadAverageStart: number[]
  loadAverageEnd?: number[]
  redisVersion?: string
  postgresVersion?: string
  wrangler?: string
  miniflare?: string
}

export function machineInfo(): MachineInfo {
  return {
    date: new Date().toISOString(),
    nproc: availableParallelism(),
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadAverageStart: loadavg().map((l) => round(l, 2)),
  }
}

export interface MemoryReport {
  sample: KeyMemory
  /** Keys created through the claim path (the seed step). */
  keysCreated: number
  usedMemoryBefore: number
  usedMemoryAfter: number
  /** (after − before) ÷ keysCreated; the Redis is shared, so others' writes add noise. */
  bytesPerKeyInfo: number
}

export interface BenchReport {
  machine: MachineInfo
  config: Record<string, unknown>
  steps: StepResult[]
  redisBenchmark: RedisBenchmarkResult
  memory: MemoryReport | null
  targets: Target[]
  /** The overload targets, from the overload phase (not measured when it did not run). */
  overloadTargets: Target[]
  /** The Worker alone on the queue path, measured first when an open-loop phase ran. */
  capacity?: CapacityReport
  /** The origin against the raw INSERT in alternated slices (phase `direct`). */
  insertRatio?: Omit<InsertRatio, 'slices'>
  /** What an event costs (phase `cost`). */
  cost?: CostReport
  overload?: OverloadReport
  queueDrain?: QueueDrainReport
  admission?: AdmissionReport
  checks: Array<Check & { step: string }>
  profiles?: Array<ProfileSummary & { label: string }>
  elapsedS: number
  /** Failures of the run itself (exit code 1). */
  problems: string[]
  /** Things worth knowing that are not failures (a section skipped for time, ...). */
  notes: string[]
  /** Each channel's worst forged request over its smallest, ms (phase `pre-verification`). */
  preVerification?: PreVerificationCost[]
  /** The decision counters' hot-path cost in workerd (phase `decision-counters`). */
  decisionCounters?: DecisionCountersCost
  /** Verification with 1 and 100,000 connections in KV (phase `connections`, opt-in). */
  connections?: ConnectionsReport
}

export interface ProfileSummary {
  file: string
  totalMs: number
  /** Sampled time not idle. */
  busyMs: number
  top: Array<{ fn: string; where: string; selfMs: number; pct: number }>
  byPlace: Array<{ where: string; selfMs: number; pct: number }>
}

const find = (steps: StepResult[], id: string) => steps.find((s) => s.id === id)

/** The gateway's targets, each met / not met / not measured, with the numbers behind it. */
export type { Target } from './targets'

export function judgeTargets(
  steps: StepResult[],
  memory: MemoryReport | null,
  headline: number,
  insertRatio?: InsertRatio,
): Target[] {
  return [
    originTarget(steps, headline, insertRatio),
    firstSeenTarget(steps, headline),
    backfillTarget(steps),
    stormTarget(steps, headline),
    memoryTarget(memory),
    no5xxTarget(steps),
  ]
}

/**
 * Judged on the alternated rounds (bench/insert-ratio.ts) when they ran, else on the two steps of
 * the table.
 */
function originTarget(steps: StepResult[], headline: number, alternated?: InsertRatio): Target {
  const name = `origin ingest path ≥ 2,500 events/s and ≥ 60% of a raw one-statement INSERT at c=${headline}`
  const origin = find(steps, `origin-insert@${headline}`)
  const raw = find(steps, `raw-insert@${headline}`)
  const pair = alternated
    ? { origin: alternated.origin.eventsPerS, raw: alternated.raw.eventsPerS, how: 'alternated' }
    : origin && raw
      ? { origin: origin.eventsPerS, raw: raw.eventsPerS, how: 'one step each' }
      : undefined
  if (!pair) return notMeasured(name)
  const share = pair.origin / Math.max(1, pair.raw)
  return {
    name,
    met: pair.origin >= 2500 && share >= 0.6,
    detail: `${fmt(pair.origin)} events/s vs raw INSERT ${fmt(pair.raw)}/s = ${fmt(100 * share)}% (${pair.how})`,
  }
}

function firstSeenTarget(steps: StepResult[], headline: number): Target {
  const name = `first-seen ≥ 1,000 events/s with p99 ≤ 100 ms at c=${headline}`
  const first = find(steps, `first-seen@${headline}`)
  if (!first) return notMeasured(name)
  return {
    name,
    met: first.eventsPerS >= 1000 && first.latency.p99 <= 100,
    detail: `${fmt(first.eventsPerS)} events/s, p99 ${fmt(first.latency.p99, 1)} ms`,
  }
}

function backfillTarget(steps: StepResult[]): Target {
  const step = steps.find((s) => s.openLoop !== undefined)
  if (!step?.openLoop) return notMeasured('Slack backfill, open loop')
  const o = step.openLoop
  const rowsOk = step.checks.every((c) => c.ok)
  return {
    name: `Slack backfill at ${fmt(o.ratePerS)} events/s open loop for ${fmt(o.sendDurationS)} s: rate kept, every event acknowledged and one row`,
    met: o.achievedRatePerS >= 0.99 * o.ratePerS && step.ok2xx === o.scheduled && rowsOk,
    detail:
      `${fmt(o.achievedRatePerS)} answers/s achieved, ${fmt(step.ok2xx)} of ${fmt(o.scheduled)} 2xx, ` +
      `p50 ${fmt(step.latency.p50, 1)} / p99 ${fmt(step.latency.p99, 1)} ms from the scheduled send, ` +
      `backlog max ${fmt(o.maxBacklog)}, drained ${fmt(o.drainS, 2)} s after the last send; ` +
      `rows: ${rowsOk ? 'every acknowledged event is one row' : 'CHECK FAILED'}`,
  }
}

function stormTarget(steps: StepResult[], headline: number): Target {
  const name = `duplicate storm ≥ 60% of verify-only at c=${headline} (no memo of settled keys)`
  const storm = find(steps, `duplicate-storm@${headline}`)
  const verify = find(steps, `verify-only@${headline}`)
  if (!storm || !verify) return notMeasured(name)
  const workerdUs = (step: StepResult) =>
    ((step.cpuMs.workerd ?? 0) * 1000) / Math.max(1, step.answered)
  const pct = (step: StepResult) => fmt((100 * step.eventsPerS) / Math.max(1, verify.eventsPerS))
  // The memo's figure is labelled apart: it is not the target's (one isolate flatters it).
  const memo = find(steps, `duplicate-storm-memo@${headline}`)
  const memoNote = memo
    ? `; second figure, in-isolate memo on: ${fmt(memo.eventsPerS)} events/s = ${pct(memo)}%, ` +
      `${fmt(workerdUs(memo))} µs per replay`
    : ''
  return {
    name,
    met: storm.eventsPerS >= 0.6 * verify.eventsPerS,
    detail:
      `${fmt(storm.eventsPerS)} vs ${fmt(verify.eventsPerS)} events/s = ${pct(storm)}%; ` +
      `workerd CPU ${fmt(workerdUs(storm))} µs per replay (verify-only ` +
      `${fmt(workerdUs(verify))} µs per request)${memoNote}`,
  }
}

function memoryTarget(memory: MemoryReport | null): Target {
  const name = 'Redis ≤ 100 bytes per dedup key (MEMORY USAGE), keys readable'
  if (!memory || memory.sample.sampled === 0) return notMeasured(name)
  return {
    name,
    met: memory.sample.production.avgBytes <= 100,
    detail:
      `MEMORY USAGE ${fmt(memory.sample.production.avgBytes, 1)} B/key as production names ` +
      `keys (${Object.entries(memory.sample.byNamespace)
        .map(([ns, v]) => `${ns} ${fmt(v.avgBytes)}`)
        .join(', ')}), ${fmt(memory.sample.avgBytes, 1)} B with the bench prefix; ` +
      `INFO used_memory ${fmt(memory.bytesPerKeyInfo, 1)} B/key over ${fmt(memory.keysCreated)} keys ` +
      '(adds the TTL entry and hash-table slack)',
  }
}

/**
 * Closed loops only: an open loop at the measured capacity (the backfill) drives one isolate past
 * its in-flight bound, and the admission gate's 503 + Retry-After there is the vendor's retry
 * answer by design (judged with the admission phase's figures), not a failure of the gateway.
 */
function no5xxTarget(steps: StepResult[]): Target {
  const gateway = steps.filter((s) => s.kind === 'scenario' && !s.openLoop)
  const with5xx = gateway.filter((s) => s.status5xx > 0)
  return {
    name: 'no 5xx from the gateway in any closed-loop scenario (no origin-down scenario here)',
    met: gateway.length > 0 ? with5xx.length === 0 : null,
    detail:
      with5xx.length === 0
        ? `0 of ${fmt(gateway.reduce((a, s) => a + s.answered, 0))} answers`
        : with5xx.map((s) => `${s.id}: ${s.status5xx}`).join(', '),
  }
}

const SHEDDING_ON = 'shedding on, batched drain'
const SINGLE_DRAIN = 'shedding on, single drain'

/** The overload targets, judged on the overload phase's figures. */
export function judgeOverloadTargets(overload: OverloadReport | undefined): Target[] {
  const on = overload?.modes.find((m) => m.mode === SHEDDING_ON)
  const single = overload?.modes.find((m) => m.mode === SINGLE_DRAIN)
  const load = overload
    ? `${fmt(overload.ratePerS)}/s for ${overload.durationS} s, origin ${overload.originLimit}`
    : ''
  const within3s = 'overload, shedding on: ≥ 99 % of requests answered 2xx within 3 s'
  const p99 = 'overload, shedding on: p99 ≤ 500 ms from the scheduled send'
  const drain = 'overload: drain with batched ingest ≥ 3× single ingest'
  const origin = 'origin alone: batched ingest ≥ 2× single at c=50'
  return [
    on
      ? {
          name: within3s,
          met: on.within3sShare >= 0.99,
          detail: `${fmt(on.within3sShare * 100, 1)} % (${load})`,
        }
      : notMeasured(within3s),
    on
      ? {
          name: p99,
          met: on.p99Ms <= 500,
          detail: `p99 ${fmt(on.p99Ms)} ms, p50 ${fmt(on.p50Ms)} ms`,
        }
      : notMeasured(p99),
    on && single
      ? {
          name: drain,
          met: on.drainRatePerS >= 3 * single.drainRatePerS,
          detail:
            `${fmt(on.drainRatePerS, 1)} vs ${fmt(single.drainRatePerS, 1)} events/s = ` +
            `${fmt(on.drainRatePerS / Math.max(single.drainRatePerS, 0.001), 1)}×`,
        }
      : notMeasured(drain),
    overload
      ? {
          name: origin,
          met: overload.origin.batchedEventsPerS >= 2 * overload.origin.singleEventsPerS,
          detail:
            `${fmt(overload.origin.batchedEventsPerS)} vs ${fmt(overload.origin.singleEventsPerS)} events/s ` +
            `(${overload.origin.eventsPerBatch} a request, c=${overload.origin.concurrency}) = ` +
            `${fmt(overload.origin.batchedEventsPerS / Math.max(overload.origin.singleEventsPerS, 1), 1)}×`,
        }
      : notMeasured(origin),
  ]
}

function ratioCell(step: StepResult): string {
  if (step.ratio === undefined || !step.baselineId) return '—'
  return `${fmt(step.ratio, 2)}× ${step.baselineId}`
}

/** Table order: the scenarios, then `wrangler dev`, then the baselines; by concurrency within. */
const ROW_ORDER = [
  'seed',
  'first-seen@',
  'duplicate-storm@',
  'duplicate-storm-memo@',
  'mixed@',
  'slack-backfill@',
  'redis-down@',
  'first-seen-wrangler-dev@',
  'duplicate-storm-wrangler-dev@',
  'verify-only@',
  'origin-insert@',
  'raw-insert@',
  'origin-replay@',
  'upstash-set-nx@',
]

function ordered(steps: StepResult[]): StepResult[] {
  const rank = (s: StepResult) => {
    const i = ROW_ORDER.findIndex((prefix) => s.id.startsWith(prefix))
    return i === -1 ? ROW_ORDER.length : i
  }
  return [...steps].sort((a, b) => rank(a) - rank(b) || a.concurrency - b.concurrency)
}

/** The results table as Markdown rows (also what the console shows). */
export function resultsTable(report: BenchReport): string {
  const lines = [
    '| scenario | target | c | events/s | p50 ms | p95 ms | p99 ms | non-2xx | errors | rows/s | vs baseline | s | load |',
    '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|',
  ]
  for (const s of ordered(report.steps)) {
    const non2xx = s.non2xx
      ? `${fmt(s.non2xx)} (${Object.entries(s.statusCounts)
          .filter(([code]) => !code.startsWith('2'))
          .map(([code, n]) => `${code}×${n}`)
          .join(' ')})`
      : '0'
    lines.push(
      `| ${s.scenario}${s.unfinished ? ' (**did not finish**)' : ''} | ${s.target} | ${s.openLoop ? 'open' : s.concurrency} | ${fmt(s.eventsPerS)} | ${fmt(
        s.latency.p50,
        1,
      )} | ${fmt(s.latency.p95, 1)} | ${fmt(s.latency.p99, 1)} | ${non2xx} | ${fmt(s.errors)} | ${
        s.rowsPerS === null ? '—' : fmt(s.rowsPerS)
      } | ${ratioCell(s)} | ${fmt(s.durationS, 2)} | ${fmt(s.loadAverage1m ?? 0, 1)} |`,
    )
  }
  const rb = report.redisBenchmark
  lines.push(
    rb.status === 'ok'
      ? `| redis-benchmark SET NX PX GET | Redis (direct) | ${rb.concurrency} | ${fmt(rb.rps)} | ${fmt(
          rb.p50,
          2,
        )} | ${fmt(rb.p95, 2)} | ${fmt(rb.p99, 2)} | — | — | — | baseline | | |`
      : `| redis-benchmark | Redis (direct) | — | ${rb.note ?? rb.status} | | | | | | | | | |`,
  )
  return lines.join('\n')
}

/** CPU ms per 1,000 answered requests, per component, for the steps at the headline concurrency. */
export function cpuTable(report: BenchReport, headline: number): string {
  const steps = report.steps.filter(
    (s) => (s.concurrency === headline || s.openLoop) && s.answered > 0,
  )
  const components = [...new Set(steps.flatMap((s) => Object.keys(s.cpuMs)))].filter((c) =>
    steps.some((s) => (s.cpuMs[c] ?? 0) > 0),
  )
  if (components.length === 0) return '(no /proc: CPU per component not measured)'
  const lines = [
    `| step (c=${headline}) | ${components.join(' | ')} | cores used: all / busiest |`,
    `|---|${components.map(() => '--:').join('|')}|--:|`,
  ]
  for (const s of steps) {
    const per1k = components.map((c) => fmt(((s.cpuMs[c] ?? 0) * 1000) / s.answered))
    const total = Object.values(s.cpuMs).reduce((a, b) => a + b, 0) / 1000
    const [busiest, ms] = Object.entries(s.cpuMs).sort((a, b) => b[1] - a[1])[0] ?? ['-', 0]
    lines.push(
      `| ${s.id} | ${per1k.join(' | ')} | ${fmt(total / s.durationS, 2)} / ${busiest} ${fmt(
        ms / 1000 / s.durationS,
        2,
      )} |`,
    )
  }
  return lines.join('\n')
}

/**
 * The decision counters' cost per decision, and what share that is of the workerd CPU a
 * duplicate-storm request took at the headline concurrency (the cheapest gateway request, so the
 * largest share), when both were measured.
 */
export function decisionCountersLine(report: BenchReport, headline: number): string {
  const cost = report.decisionCounters
  if (!cost) return 'decision counters: not measured (phase decision-counters not run)'
  // The sweep's storm, or the A/B's own when the sweep did not run.
  const stormId = [`duplicate-storm@${headline}`, `storm-counters-on-1@${headline}`].find(
    (id) => workerdUsPerRequest(report.steps, id) !== null,
  )
  const stormUs = stormId ? (workerdUsPerRequest(report.steps, stormId) ?? 0) : 0
  const share =
    stormUs > 0
      ? `; ${fmt((100 * cost.nsPerDecision) / 1000 / stormUs, 2)} % of the workerd CPU of a ` +
        `${stormId} request (${fmt(stormUs)} µs)`
      : ''
  return `decision counters: ${describeCost(cost)}${share}`
}

/** workerd CPU µs per answered request of a step, or null when it did not run. */
function workerdUsPerRequest(steps: StepResult[], id: string): number | null {
  const step = find(steps, id)
  return step?.answered ? ((step.cpuMs.workerd ?? 0) * 1000) / step.answered : null
}

/**
 * The counters' A/B: the duplicate storm's workerd CPU per request with the counters on and off
 * (phase `decision-counters`, two alternated rounds of each), the difference, and the noise: how
 * far two runs of the same setting differ.
 */
export function countersAbLine(report: BenchReport, headline: number): string {
  const us = (setting: 'on' | 'off', round: number) =>
    workerdUsPerRequest(report.steps, `storm-counters-${setting}-${round}@${headline}`)
  const [on1, on2, off1, off2] = [us('on', 1), us('on', 2), us('off', 1), us('off', 2)]
  if (on1 == null || on2 == null || off1 == null || off2 == null) {
    return 'counters A/B: not measured'
  }
  const onUs = (on1 + on2) / 2
  const offUs = (off1 + off2) / 2
  const noise = Math.max(Math.abs(on1 - on2), Math.abs(off1 - off2))
  const diff = onUs - offUs
  const verdict = Math.abs(diff) <= noise ? 'within the noise' : 'larger than the noise'
  return (
    `counters A/B (duplicate storm, c=${headline}, DECISION_FLUSH_SECONDS default vs 0, two ` +
    `alternated rounds each): workerd ${fmt(onUs)} µs per request on, ${fmt(offUs)} off, ` +
    `difference ${diff >= 0 ? '+' : ''}${fmt(diff)} µs; two runs of one setting differ by up to ` +
    `${fmt(noise)} µs: ${verdict}`
  )
}

/** Per step: what the gateway and the origin logged, e.g. "gateway duplicate by redis (200) 1,922". */
export function decisionsList(report: BenchReport): string {
  return ordered(report.steps)
    .filter((s) => Object.keys(s.logCounts).length > 0)
    .map((s) => {
      const total = Object.entries(s.logCounts)
        .filter(([k]) => k.startsWith('gateway'))
        .reduce((a, [, n]) => a + n, 0)
      const parts = Object.entries(s.logCounts)
        .sort((a, b) => b[1] - a[1])
        .map(([k, n]) => {
          const share = k.startsWith('gateway') && total > 0 ? ` (${fmt((100 * n) / total)}%)` : ''
          return `${k} ${fmt(n)}${share}`
        })
      return `- ${s.id}: ${parts.join('; ')}`
    })
    .join('\n')
}

export function markdown(report: BenchReport, headline: number): string {
  const m = report.machine
  const mem = report.memory
  const failed = report.checks.filter((c) => !c.ok)
  const out = [
    '# `npm run bench`: latest results',
    '',
    `Machine: ${m.nproc} cores (\`nproc\`), ${m.cpuModel}, ${m.memoryGiB} GiB, ${m.platform}; ` +
      `Node ${m.node}; Redis ${m.redisVersion ?? '?'}; Postgres ${m.postgresVersion ?? '?'}; ` +
      `wrangler ${m.wrangler ?? '?'}, miniflare ${m.miniflare ?? '?'}.`,
    `Date: ${m.date}. Load average (1/5/15 min) at start ${m.loadAverageStart.join(' / ')}, ` +
      `at end ${(m.loadAverageEnd ?? []).join(' / ')}. Whole run: ${fmt(report.elapsedS)} s; ` +
      `${report.config.durationS} s per step.`,
    '',
    'Everything runs on this one machine: load generator (autocannon, own process), the Worker in ' +
      "workerd via Miniflare's own HTTP listener, the origin (Node), the Upstash REST stand-in and " +
      'the Neon WebSocket proxy (Node, in the bench process), Redis and Postgres. Numbers taken ' +
      'while other work runs on the machine are noisy: read them with the load average.',
    '',
    '## Results',
    '',
    resultsTable(report),
    '',
    '- **first-seen**: every request a new Slack / Twilio / Telegram event (verify, claim, ' +
      'forward, insert, complete). **seed**: the same, once, before the storms: the replay set.',
    '- **duplicate storm**: every request a replay of an acknowledged seed event (answered from ' +
      'Redis). **duplicate storm, memo on**: the same on a second gateway with ' +
      'SETTLED_MEMO_ENTRIES set, whose isolate answers the replays it saw settled without Redis ' +
      "(labelled apart: production's retries land on other isolates). **mixed**: 1 new event, " +
      'then 7 replays. **Redis down**: the Upstash stand-in ' +
      'stopped; every replay forwarded and decided by Postgres.',
    '- **Slack backfill**: an open loop, every request a new Slack event sent on a fixed schedule ' +
      '(BENCH_BACKFILL_RATE a second for BENCH_BACKFILL_S) whatever the answers; latency from ' +
      "each request's scheduled send time, so falling behind shows (bench/open-loop.ts).",
    "- **wrangler dev**: the same Worker behind wrangler's development proxy (its own ceiling).",
    '- Baselines: **verify-only**: a Worker of the same routes that only verifies the signature ' +
      '(bench/verify-only-worker.ts); **origin insert / duplicate path**: signed POST /v1/events ' +
      'straight at the origin; **raw one-statement INSERT**: one INSERT per request through the ' +
      "origin's database layer (same driver, Neon proxy, pool size; bench/raw-insert-server.ts); " +
      "**claim via Upstash REST**: the claim's SET NX PX GET straight at " +
      'the stand-in; **redis-benchmark**: the same command straight at Redis.',
    '',
    'events/s = 2xx answers per second; latency from every answer; non-2xx and errors (timeouts, ' +
      'connection errors) are counted, never dropped; rows/s = rows the step created in Postgres ÷ ' +
      "its duration; s = the step's measured duration (to its last answer when it ran out of " +
      'requests first); load = the 1-minute load average when it started.',
    '',
    ...capacitySection(report.capacity),
    ...backfillSection(report.steps),
    ...insertRatioSection(report.insertRatio),
    '## Targets',
    '',
    targetsList(report.targets),
    '',
    ...overloadSection(report),
    ...(report.cost ? costSection(report.cost) : []),
    '## Redis memory per dedup key',
    '',
    mem
      ? [
          `- MEMORY USAGE over ${mem.sample.sampled} keys as the bench wrote them: avg ` +
            `${fmt(mem.sample.avgBytes, 1)} B (min ${mem.sample.minBytes}, max ${mem.sample.maxBytes}); ` +
            `key ${fmt(mem.sample.avgKeyLength, 1)} B (run prefix included), value ` +
            `${fmt(mem.sample.avgValueLength, 1)} B; states ${JSON.stringify(mem.sample.states)}.`,
          `- The same keys named as in production (no REDIS_KEY_PREFIX): avg ` +
            `${fmt(mem.sample.production.avgBytes, 1)} B (key ${fmt(mem.sample.production.avgKeyLength, 1)} B); ` +
            Object.entries(mem.sample.byNamespace)
              .map(
                ([ns, v]) =>
                  `${ns} ${fmt(v.avgBytes, 1)} B (key ${fmt(v.avgKeyLength)} B, ${v.keys} keys)`,
              )
              .join('; ') +
            '.',
          `- Example (run prefix cut): \`${mem.sample.exampleKey}\` = \`${mem.sample.exampleValue}\`.`,
          `- INFO memory used_memory: ${fmt(mem.usedMemoryBefore)} → ${fmt(mem.usedMemoryAfter)} B ` +
            `for ${fmt(mem.keysCreated)} keys created through the worker's claim path = ` +
            `${fmt(mem.bytesPerKeyInfo, 1)} B/key (includes the TTL entry; shared Redis, so noisy).`,
        ].join('\n')
      : '(not measured)',
    '',
    '## Where the CPU goes',
    '',
    'CPU milliseconds per 1,000 answered requests, by process, from /proc (user + system). ' +
      'The last column: how many cores the whole stack used during the step (on a shared machine ' +
      'the rest went to other work), and the busiest process. workerd runs the Worker isolate on ' +
      'one thread, so a step whose workerd figure is 1.00 is bound by that thread; there the ' +
      'throughput ratio of two steps is the inverse of their workerd CPU per request. ' +
      'Per-request CPU is the figure that noise disturbs least.',
    '',
    cpuTable(report, headline),
    '',
    '## What the decision counters cost',
    '',
    "One decision through the Worker's hot-path counting call (tallyDecision, as countDecision " +
      'runs it once per delivery), N times in one request to the verify-only Worker in workerd, ' +
      'timed from outside against the same request with N = 0 (bench/decision-counters-phase.ts). ' +
      'The flush is not on the hot path (one subrequest per isolate and DECISION_FLUSH_SECONDS). ' +
      'Then the whole gateway: the duplicate storm against two fresh gateways alike but for the ' +
      'counters (default on; DECISION_FLUSH_SECONDS=0), alternated twice, workerd CPU per request ' +
      'each; two runs of one setting show the noise.',
    '',
    `- ${decisionCountersLine(report, headline)}`,
    `- ${countersAbLine(report, headline)}`,
    '',
    ...(report.connections ? connectionsSection(report.connections) : []),
    '## Who decided',
    '',
    "Counted from the gateway's decision log lines and the origin's event lines during each step " +
      '(an independent view of the answers):',
    '',
    decisionsList(report),
    '',
    '## Correctness checks',
    '',
    failed.length === 0
      ? `All ${report.checks.length} checks passed (per step: every 2xx new event has exactly its ` +
        'row, replays make no rows, every request accounted for).'
      : failed.map((c) => `- **FAILED** ${c.step}: ${c.name}: ${c.detail}`).join('\n'),
  ]
  for (const profile of report.profiles ?? []) {
    out.push(
      '',
      `## CPU profile: ${profile.label} (BENCH_PROFILE=1)`,
      '',
      `${profile.file.slice(profile.file.indexOf('bench/'))}: ${fmt(profile.totalMs)} ms sampled, ` +
        `${fmt(profile.busyMs)} ms busy; % of busy time.`,
      '',
      '| self ms | % | function | where |',
      '|--:|--:|---|---|',
      ...profile.top.map((t) => `| ${fmt(t.selfMs)} | ${fmt(t.pct, 1)} | ${t.fn} | ${t.where} |`),
      '',
      '| self ms | % | where (package / file) |',
      '|--:|--:|---|',
      ...profile.byPlace.map((p) => `| ${fmt(p.selfMs)} | ${fmt(p.pct, 1)} | ${p.where} |`),
    )
  }
  const stepNotes = report.steps.flatMap((st) => st.notes.map((n) => `${st.id}: ${n}`))
  if (report.notes.length + stepNotes.length > 0) {
    out.push('', '## Notes', '', ...[...report.notes, ...stepNotes].map((n) => `- ${n}`))
  }
  if (report.problems.length > 0) {
    out.push('', '## Problems', '', ...report.problems.map((p) => `- ${p}`))
  }
  out.push('', '![throughput and p99 against concurrency](chart.svg)', '')
  return out.join('\n')
}

function connectionsSection(r: ConnectionsReport): string[] {
  return [
    '## The connection registry: 1 and 100,000 connections in KV',
    '',
    `LINE deliveries to the verify-only Worker in ${r.runtime}, one at a time, the cases ` +
      'alternated in rounds (bench/connections-phase.ts); workerd CPU per request from /proc ' +
      "(Miniflare's KV store runs in the same workerd process: a miss's figure includes it).",
    '',
    ...connectionsLines(r).map((line) => `- ${line}`),
    '',
  ]
}
