/**
 * The overload phase (issue 23): first what the Worker alone sustains on the queue path
 * (bench/capacity.ts), then the origin made the bottleneck on purpose (bench/slow-proxy.ts: a
 * tenth of the offered rate in requests), an open-loop Slack backfill well inside that capacity
 * (the ratio is reported; above half of it, said so), and, in one run:
 * - shedding off, shedding on (batched drain), shedding on with the origin refusing batches
 *   (single drain): answered 2xx within 3 s, p50 / p99 from each request's scheduled time, the
 *   time to drain the queue afterwards and its rate, each acknowledged event exactly one row,
 *   workerd CPU per acknowledged event;
 * - the origin's own ingest rate at c=50, batched (10 events a request) vs single;
 * - a chart of answer latency over time, shedding off and on (bench/results/overload-*.svg).
 * Each mode gets a gateway Worker of its own (own isolate, own queue), started and stopped here.
 * @module
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { signForward } from '../contract/forward-signature'
import { type CapacityReport, findQueuePathCapacity } from './capacity'
import { BENCH_SECRETS, RESULTS_DIR, vendorVars } from './config'
import { cpuMsOf, isOk, rowCount, sendSlackBackfill, waitForRows } from './landed'
import { latencyChart } from './latency-chart'
import type { RunState } from './phases'
import { inboundEventOf, signOriginRequests, type VendorEvent, type WireRequest } from './requests'
import { startSlowProxy } from './slow-proxy'
import { summarize } from './stats'
import { fmt, round, say } from './util'

/**
 * The offered load, requests a second (BENCH_OVERLOAD_RATE); unset: half the queue path's
 * capacity measured first ("well inside" it), in steps of 10, between MIN_RATE and MAX_RATE.
 */
const RATE_SETTING = process.env.BENCH_OVERLOAD_RATE
const MIN_RATE = 20
const MAX_RATE = 200
/** For this long (BENCH_OVERLOAD_S). */
const DURATION_S = Number(process.env.BENCH_OVERLOAD_S ?? 15)
/** Module state for the phase's one run: set by {@link chooseRate} before anything uses it. */
let offeredRate = 100
/** The origin behind the proxy: one request at a time, each held this long: offeredRate ÷ 10 a second. */
let originDelayMs = 100

/** The offered rate: the setting, or half the capacity (rounded down to 10s, within bounds). */
function chooseRate(capacity: CapacityReport): number {
  if (RATE_SETTING) return Number(RATE_SETTING)
  const half = Math.floor(capacity.capacityPerS / 2 / 10) * 10
  return Math.min(MAX_RATE, Math.max(MIN_RATE, half))
}
const SLACK_DEADLINE_MS = 3_000
const DRAIN_MAX_S = 240
/** Events per request in the origin's batched ingest step. */
const ORIGIN_BATCH = 10

interface Mode {
  name: string
  shed: boolean
  batch: boolean
}

const MODES: readonly Mode[] = [
  { name: 'shedding off', shed: false, batch: true },
  { name: 'shedding on, batched drain', shed: true, batch: true },
  { name: 'shedding on, single drain', shed: true, batch: false },
]

export interface OverloadModeResult {
  mode: string
  offered: number
  answered2xx: number
  within3sShare: number
  p50Ms: number
  p99Ms: number
  acknowledged: number
  /** From the end of the load until every acknowledged event is a row. */
  drainS: number
  /** Events still to land when the load ended ÷ drainS. */
  drainRatePerS: number
  rowsPerAcknowledged: number
  missing: number
  workerdCpuMsPerEvent: number
  answerMs: number[]
}

export interface OverloadReport {
  ratePerS: number
  durationS: number
  originLimit: string
  loadAverage: number[]
  capacity: CapacityReport
  /** The offered rate ÷ the queue path's capacity. */
  rateShareOfCapacity: number | null
  modes: Array<Omit<OverloadModeResult, 'answerMs'>>
  origin: OriginIngestRates
}

export async function runOverload(state: RunState): Promise<void> {
  const { stack } = state
  const capacity = await findQueuePathCapacity(state)
  offeredRate = chooseRate(capacity)
  originDelayMs = Math.round((1_000 * 10) / offeredRate)
  const capacityLines = capacitySummary(capacity)
  for (const line of capacityLines) say(line)
  const proxy = await startSlowProxy(stack.origin.url, {
    concurrency: 1,
    delayMs: originDelayMs,
  })
  say(
    `overload: ${offeredRate}/s for ${DURATION_S} s; origin behind a proxy taking one request at a time, ` +
      `each held ${originDelayMs} ms (≤ ${fmt(1_000 / originDelayMs)} requests/s)`,
  )
  const results: OverloadModeResult[] = []
  try {
    for (const mode of MODES) results.push(await runMode(state, proxy, mode))
  } finally {
    await proxy.close()
  }
  const origin = await originIngestRates(state)
  const report: OverloadReport = {
    ratePerS: offeredRate,
    durationS: DURATION_S,
    originLimit: `1 request at a time, ${originDelayMs} ms each`,
    loadAverage: (await import('node:os')).loadavg().map((n) => round(n, 2)),
    capacity,
    rateShareOfCapacity:
      capacity.capacityPerS > 0 ? round(offeredRate / capacity.capacityPerS, 2) : null,
    modes: results.map(({ answerMs: _, ...rest }) => rest),
    origin,
  }
  state.overload = report
  writeOverloadJson(state)
  const tag = state.run.config.runTag
  const chart = latencyChart(results.slice(0, 2), {
    ratePerS: offeredRate,
    durationS: DURATION_S,
    title: `Answer latency from each request's scheduled time (${offeredRate}/s Slack backfill, origin limited to ${fmt(1_000 / originDelayMs)} requests/s)`,
  })
  writeFileSync(join(RESULTS_DIR, `overload-${tag}.svg`), chart)
  state.notes.push(...capacityLines)
  for (const line of summaryLines(report.modes, origin)) {
    say(line)
    state.notes.push(line)
  }
}

/** bench/results/overload-{run}.json: this phase's figures and the queue phase's, as far as run. */
export function writeOverloadJson(state: RunState): void {
  const out = { ...state.overload, queueDrain: state.queueDrain }
  const file = join(RESULTS_DIR, `overload-${state.run.config.runTag}.json`)
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`)
}

/** The capacity sweep's lines, and whether the overload rate is well inside it. */
function capacitySummary(capacity: CapacityReport): string[] {
  const lines = capacity.steps.map(
    (s) =>
      `capacity | ${fmt(s.ratePerS)}/s offered (${fmt(s.offered)}) | ${fmt(s.okShare * 100, 1)} % 2xx | ` +
      `p50 ${s.p50Ms} ms | p99 ${s.p99Ms} ms from schedule | ${s.workerdCpuMsPerEvent} ms workerd CPU/event | ` +
      `${s.passed ? 'passed' : 'failed'}`,
  )
  const at = capacity.ceilingFound
    ? `${fmt(capacity.capacityPerS)}/s`
    : `at least ${fmt(capacity.capacityPerS)}/s (every rate tried passed)`
  lines.push(
    `capacity | the Worker alone on the queue path (verify + claim + queue send), p99 ≤ 1 s and ≥ 99 % 2xx: ${at} ` +
      `(load average ${capacity.loadAverage1m})`,
  )
  if (capacity.capacityPerS === 0) {
    lines.push(
      `capacity | no rate passed: the overload rate ${offeredRate}/s is not shown to be inside it`,
    )
  } else {
    const share = offeredRate / capacity.capacityPerS
    lines.push(
      `capacity | overload rate ${offeredRate}/s = ${fmt(share * 100)} % of it` +
        (share > 0.5
          ? ': ABOVE half of the capacity, not "well inside" (lower BENCH_OVERLOAD_RATE)'
          : ': well inside (≤ half)'),
    )
  }
  return lines
}

async function runMode(
  state: RunState,
  proxy: Awaited<ReturnType<typeof startSlowProxy>>,
  mode: Mode,
): Promise<OverloadModeResult> {
  proxy.setBatch(mode.batch)
  const worker = await state.stack.local.startWorker({
    originUrl: proxy.url,
    vars: { ...vendorVars(), SHED_AFTER_FAILURES: mode.shed ? '3' : '0' },
  })
  try {
    const pids = worker.runtime === 'miniflare' ? worker.runtimePids : []
    const cpuBefore = cpuMsOf(pids)
    const { events, result } = await sendSlackBackfill(state, worker.url, {
      ratePerS: offeredRate,
      count: offeredRate * DURATION_S,
      timeoutS: 30,
    })
    const loadEndedAt = Date.now()
    const acknowledged = events.filter((_, i) => isOk(result.statuses[i]))
    const landedAtEnd = await rowCount(state, acknowledged)
    const landed = await waitForRows(state, acknowledged, DRAIN_MAX_S)
    const drainS = (Date.now() - loadEndedAt) / 1000
    const cpuMs = cpuMsOf(pids) - cpuBefore
    const answerMs = result.openLoop?.answerMs ?? []
    const answered = answerMs.filter((ms, i) => ms >= 0 && isOk(result.statuses[i]))
    const latency = summarize(answered)
    const out: OverloadModeResult = {
      mode: mode.name,
      offered: events.length,
      answered2xx: answered.length,
      within3sShare: round(
        answered.filter((ms) => ms <= SLACK_DEADLINE_MS).length / events.length,
        4,
      ),
      p50Ms: round(latency.p50, 0),
      p99Ms: round(latency.p99, 0),
      acknowledged: acknowledged.length,
      drainS: round(drainS, 1),
      drainRatePerS: round((landed - landedAtEnd) / Math.max(drainS, 0.001), 1),
      rowsPerAcknowledged: round(landed / Math.max(acknowledged.length, 1), 4),
      missing: acknowledged.length - landed,
      workerdCpuMsPerEvent: round(cpuMs / Math.max(acknowledged.length, 1), 2),
      answerMs,
    }
    say(
      `overload ${mode.name}: ${fmt(out.within3sShare * 100, 1)} % 2xx within 3 s, p50 ${out.p50Ms} ms, ` +
        `p99 ${out.p99Ms} ms; drained in ${out.drainS} s (${out.drainRatePerS} events/s); ` +
        `${out.missing} missing; ${out.workerdCpuMsPerEvent} ms workerd CPU per event`,
    )
    return out
  } finally {
    await worker.stop()
  }
}

export interface OriginIngestRates {
  concurrency: number
  singleEventsPerS: number
  batchedEventsPerS: number
  eventsPerBatch: number
}

/** The origin on its own at c=50, its pool its own (no proxy): single vs batched ingest. */
async function originIngestRates(state: RunState): Promise<OriginIngestRates> {
  const { load, stack, factory, c50 } = state
  const durationS = state.run.config.durationS
  const singles = await signOriginRequests(factory.freshSlack(state.pool))
  const single = await load.run({
    url: stack.origin.url,
    requests: singles,
    connections: c50,
    durationS,
    timeoutS: 10,
  })
  const batches = await batchRequests(factory.freshSlack(state.pool * ORIGIN_BATCH))
  const batched = await load.run({
    url: stack.origin.url,
    requests: batches,
    connections: c50,
    durationS,
    timeoutS: 10,
  })
  const rate = (r: typeof single, per: number) =>
    round((r.statuses.filter(isOk).length * per) / Math.max(r.durationS, 0.001), 0)
  return {
    concurrency: c50,
    singleEventsPerS: rate(single, 1),
    batchedEventsPerS: rate(batched, ORIGIN_BATCH),
    eventsPerBatch: ORIGIN_BATCH,
  }
}

/** `POST /v1/events/batch` requests of `size` events each, signed as the consumer signs. */
export async function batchRequests(
  events: readonly VendorEvent[],
  size = ORIGIN_BATCH,
): Promise<WireRequest[]> {
  const requests: WireRequest[] = []
  for (let i = 0; i < events.length; i += size) {
    const slice = await Promise.all(events.slice(i, i + size).map(inboundEventOf))
    const body = JSON.stringify({ events: slice })
    const route = { method: 'POST', path: '/v1/events/batch' }
    requests.push({
      method: 'POST',
      path: route.path,
      headers: {
        'content-type': 'application/json',
        ...(await signForward(BENCH_SECRETS.origin, body, undefined, route)),
      },
      body,
    })
  }
  return requests
}

function summaryLines(
  modes: Array<Omit<OverloadModeResult, 'answerMs'>>,
  origin: OriginIngestRates,
): string[] {
  const byName = (name: string) => modes.find((m) => m.mode === name)
  const batched = byName('shedding on, batched drain')
  const single = byName('shedding on, single drain')
  const drainRatio =
    batched && single ? round(batched.drainRatePerS / Math.max(single.drainRatePerS, 0.001), 2) : 0
  return [
    ...modes.map(
      (m) =>
        `overload | ${m.mode} | ${fmt(m.within3sShare * 100, 1)} % within 3 s | p50 ${m.p50Ms} ms | ` +
        `p99 ${m.p99Ms} ms | drain ${m.drainS} s at ${m.drainRatePerS}/s | rows/ack ${m.rowsPerAcknowledged} | ` +
        `${m.workerdCpuMsPerEvent} ms CPU/event`,
    ),
    `overload | drain batched ÷ single: ${drainRatio}× (target ≥ 3×)`,
    `overload | origin at c=${origin.concurrency}: single ${origin.singleEventsPerS} events/s, batched ` +
      `(${origin.eventsPerBatch}/request) ${origin.batchedEventsPerS} events/s: ` +
      `${round(origin.batchedEventsPerS / Math.max(origin.singleEventsPerS, 1), 2)}× (target ≥ 2×)`,
  ]
}
