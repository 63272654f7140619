/**
 * The overload phase: the origin made the bottleneck on purpose (bench/slow-proxy.ts: a tenth of
 * the offered rate in requests) and an open-loop Slack backfill well inside the capacity the run
 * measured first (bench/capacity.ts; the ratio is reported; above half of it, said so), in one run:
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
import { measureCapacity } from './capacity'
import { type CapacityReport, rateFromCapacity } from './capacity-figures'
import { BENCH_SECRETS, RESULTS_DIR, vendorVars } from './config'
import { cpuMsOf, isOk, rowCount, sendSlackBackfill, waitForRows } from './landed'
import { latencyChart } from './latency-chart'
import { inboundEventOf, signOriginRequests, type VendorEvent, type WireRequest } from './requests'
import type { RunDeps } from './run-deps'
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
  return rateFromCapacity(capacity, 0.5, { min: MIN_RATE, max: MAX_RATE })
}
const SLACK_DEADLINE_MS = 3_000
/**
 * How long the drain is timed at the origin's limit. A drain still going then (event by event
 * behind a limit in requests, minutes of it) has its rate by then; the limit is lifted and the
 * rest waited for (at most DRAIN_MAX_S more), so that every acknowledged event is still checked.
 */
const DRAIN_AT_LIMIT_S = 30
const DRAIN_MAX_S = 120
/** The limit lifted: the origin at its own pace. */
const NO_LIMIT = { concurrency: 1_000, delayMs: 0 }
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
  /**
   * From the end of the load until every acknowledged event is a row, at the origin's limit; when
   * that took longer than DRAIN_AT_LIMIT_S, that long (see drainedAtLimit).
   */
  drainS: number
  /** Events that landed at the limit after the load ended ÷ drainS. */
  drainRatePerS: number
  /** False: the limit was lifted after drainS, and the rest landed afterLiftS later. */
  drainedAtLimit: boolean
  afterLiftS: number
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

export async function runOverload(state: RunDeps): Promise<OverloadReport> {
  const { stack } = state
  const capacity = state.capacity ?? (await measureCapacity(state))
  offeredRate = chooseRate(capacity)
  originDelayMs = Math.round((1_000 * 10) / offeredRate)
  const rateLines = capacitySummary(capacity)
  for (const line of rateLines) say(line)
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
  const tag = state.config.runTag
  const chart = latencyChart(results.slice(0, 2), {
    ratePerS: offeredRate,
    durationS: DURATION_S,
    title: `Answer latency from each request's scheduled time (${offeredRate}/s Slack backfill, origin limited to ${fmt(1_000 / originDelayMs)} requests/s)`,
  })
  writeFileSync(join(RESULTS_DIR, `overload-${tag}.svg`), chart)
  state.notes.push(...rateLines)
  for (const line of summaryLines(report.modes, origin)) {
    say(line)
    state.notes.push(line)
  }
  return report
}

/** Whether the overload rate is well inside the capacity. */
function capacitySummary(capacity: CapacityReport): string[] {
  const lines: string[] = []
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
  state: RunDeps,
  proxy: Awaited<ReturnType<typeof startSlowProxy>>,
  mode: Mode,
): Promise<OverloadModeResult> {
  const limit = { concurrency: 1, delayMs: originDelayMs }
  proxy.setLimits(limit)
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
    const atLimit = await waitForRows(state, acknowledged, DRAIN_AT_LIMIT_S)
    const drainS = (Date.now() - loadEndedAt) / 1000
    const drainedAtLimit = atLimit >= acknowledged.length
    let landed = atLimit
    if (!drainedAtLimit) {
      proxy.setLimits(NO_LIMIT)
      landed = await waitForRows(state, acknowledged, DRAIN_MAX_S)
      proxy.setLimits(limit)
    }
    const afterLiftS = (Date.now() - loadEndedAt) / 1000 - drainS
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
      drainRatePerS: round((atLimit - landedAtEnd) / Math.max(drainS, 0.001), 1),
      drainedAtLimit,
      afterLiftS: round(afterLiftS, 1),
      rowsPerAcknowledged: round(landed / Math.max(acknowledged.length, 1), 4),
      missing: acknowledged.length - landed,
      workerdCpuMsPerEvent: round(cpuMs / Math.max(acknowledged.length, 1), 2),
      answerMs,
    }
    say(
      `overload ${mode.name}: ${fmt(out.within3sShare * 100, 1)} % 2xx within 3 s, p50 ${out.p50Ms} ms, ` +
        `p99 ${out.p99Ms} ms; ${drainPhrase(out)}; ` +
        `${out.missing} missing; ${out.workerdCpuMsPerEvent} ms workerd CPU per event`,
    )
    return out
  } finally {
    await worker.stop()
  }
}

/** `drained in 6.8 s at 255 events/s`, or how far it got at the limit and when the rest landed. */
export function drainPhrase(
  m: Pick<OverloadModeResult, 'drainS' | 'drainRatePerS' | 'drainedAtLimit' | 'afterLiftS'>,
): string {
  return m.drainedAtLimit
    ? `drained in ${fmt(m.drainS, 1)} s at ${fmt(m.drainRatePerS, 1)} events/s`
    : `${fmt(m.drainRatePerS, 1)} events/s for ${fmt(m.drainS, 0)} s at the limit, the rest ` +
        `${fmt(m.afterLiftS, 1)} s after it was lifted`
}

export interface OriginIngestRates {
  concurrency: number
  singleEventsPerS: number
  batchedEventsPerS: number
  eventsPerBatch: number
}

/** The origin on its own at c=50, its pool its own (no proxy): single vs batched ingest. */
async function originIngestRates(state: RunDeps): Promise<OriginIngestRates> {
  const { load, stack, factory, c50 } = state
  const durationS = state.config.durationS
  const singles = await signOriginRequests(factory.freshSlack(state.pool))
  const single = await load.run({
    url: stack.origin.url,
    requests: singles,
    connections: c50,
    durationS,
    timeoutS: 10,
  })
  // As many events as the single step's pool: more than the origin takes in a step here, batched
  // or not (signing ten times as many took most of a minute on a loaded box).
  const batches = await batchRequests(factory.freshSlack(state.pool))
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
        `p99 ${m.p99Ms} ms | ${drainPhrase(m)} | rows/ack ${m.rowsPerAcknowledged} | ` +
        `${m.workerdCpuMsPerEvent} ms CPU/event`,
    ),
    `overload | drain batched ÷ single: ${drainRatio}× (target ≥ 3×)`,
    `overload | origin at c=${origin.concurrency}: single ${origin.singleEventsPerS} events/s, batched ` +
      `(${origin.eventsPerBatch}/request) ${origin.batchedEventsPerS} events/s: ` +
      `${round(origin.batchedEventsPerS / Math.max(origin.singleEventsPerS, 1), 2)}× (target ≥ 2×)`,
  ]
}
