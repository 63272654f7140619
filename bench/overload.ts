/**
 * The overload phase (issue 23): the origin made the bottleneck on purpose (bench/slow-proxy.ts:
 * a tenth of the offered rate in requests), an open-loop Slack backfill well inside what the
 * Worker sustains alone, and, in one run:
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
import { readStat } from '../local/proc'
import { BENCH_SECRETS, RESULTS_DIR, vendorVars } from './config'
import { latencyChart } from './latency-chart'
import type { RunState } from './phases'
import {
  inboundEventOf,
  signOriginRequests,
  signVendorRequests,
  type VendorEvent,
  type WireRequest,
} from './requests'
import { startSlowProxy } from './slow-proxy'
import { summarize } from './stats'
import { fmt, round, say, sleep } from './util'

/** The offered load: requests a second, for this long (BENCH_OVERLOAD_RATE, BENCH_OVERLOAD_S). */
const RATE = Number(process.env.BENCH_OVERLOAD_RATE ?? 100)
const DURATION_S = Number(process.env.BENCH_OVERLOAD_S ?? 15)
/** The origin behind the proxy: one request at a time, each held this long: RATE ÷ 10 a second. */
const ORIGIN_DELAY_MS = Math.round((1_000 * 10) / RATE)
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

export async function runOverload(state: RunState): Promise<void> {
  const { stack } = state
  const proxy = await startSlowProxy(stack.origin.url, {
    concurrency: 1,
    delayMs: ORIGIN_DELAY_MS,
  })
  say(
    `overload: ${RATE}/s for ${DURATION_S} s; origin behind a proxy taking one request at a time, ` +
      `each held ${ORIGIN_DELAY_MS} ms (≤ ${fmt(1_000 / ORIGIN_DELAY_MS)} requests/s)`,
  )
  const results: OverloadModeResult[] = []
  try {
    for (const mode of MODES) results.push(await runMode(state, proxy, mode))
  } finally {
    await proxy.close()
  }
  const origin = await originIngestRates(state)
  const report = {
    ratePerS: RATE,
    durationS: DURATION_S,
    originLimit: `1 request at a time, ${ORIGIN_DELAY_MS} ms each`,
    loadAverage: (await import('node:os')).loadavg().map((n) => round(n, 2)),
    modes: results.map(({ answerMs: _, ...rest }) => rest),
    origin,
  }
  const tag = state.run.config.runTag
  writeFileSync(join(RESULTS_DIR, `overload-${tag}.json`), `${JSON.stringify(report, null, 2)}\n`)
  const chart = latencyChart(results.slice(0, 2), {
    ratePerS: RATE,
    durationS: DURATION_S,
    title: `Answer latency from each request's scheduled time (${RATE}/s Slack backfill, origin limited to ${fmt(1_000 / ORIGIN_DELAY_MS)} requests/s)`,
  })
  writeFileSync(join(RESULTS_DIR, `overload-${tag}.svg`), chart)
  for (const line of summaryLines(report.modes, origin)) {
    say(line)
    state.notes.push(line)
  }
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
    const events = state.factory.freshSlack(RATE * DURATION_S)
    const requests = await signVendorRequests(events)
    const cpuBefore = ticks(pids)
    const result = await state.load.run({
      url: worker.url,
      requests,
      connections: 0,
      durationS: DURATION_S,
      timeoutS: 30,
      openLoop: { ratePerS: RATE },
    })
    const loadEndedAt = Date.now()
    const acknowledged = events.filter((_, i) => ok(result.statuses[i]))
    const landedAtEnd = await rowCount(state, acknowledged)
    const landed = await waitForRows(state, acknowledged)
    const drainS = (Date.now() - loadEndedAt) / 1000
    const cpuMs = ((ticks(pids) - cpuBefore) * 1000) / 100
    const answerMs = result.openLoop?.answerMs ?? []
    const answered = answerMs.filter((ms, i) => ms >= 0 && ok(result.statuses[i]))
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

const ok = (status: number | undefined) => status !== undefined && status >= 200 && status < 300

/** CPU ticks (1/100 s on Linux) of these processes so far. */
function ticks(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (readStat(pid)?.ticks ?? 0), 0)
}

/** Rows holding these events' keys; each key is at most one row (the unique index). */
async function rowCount(state: RunState, events: readonly VendorEvent[]): Promise<number> {
  if (events.length === 0) return 0
  const { rows } = await state.stack.local.sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM messages
      WHERE channel = 'slack' AND channel_message_id = ANY($1::text[])`,
    [events.map((e) => e.messageKey)],
  )
  return rows[0]?.n ?? 0
}

/** Waits until every event is a row (or DRAIN_MAX_S), returns how many are. */
async function waitForRows(state: RunState, events: readonly VendorEvent[]): Promise<number> {
  const until = Date.now() + DRAIN_MAX_S * 1000
  for (;;) {
    const n = await rowCount(state, events)
    if (n >= events.length || Date.now() > until) return n
    await sleep(250)
  }
}

/** The origin on its own at c=50, its pool its own (no proxy): single vs batched ingest. */
async function originIngestRates(state: RunState) {
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
    round((r.statuses.filter(ok).length * per) / Math.max(r.durationS, 0.001), 0)
  return {
    concurrency: c50,
    singleEventsPerS: rate(single, 1),
    batchedEventsPerS: rate(batched, ORIGIN_BATCH),
    eventsPerBatch: ORIGIN_BATCH,
  }
}

/** `POST /v1/events/batch` requests of ORIGIN_BATCH events each, signed as the consumer signs. */
async function batchRequests(events: readonly VendorEvent[]): Promise<WireRequest[]> {
  const requests: WireRequest[] = []
  for (let i = 0; i < events.length; i += ORIGIN_BATCH) {
    const slice = await Promise.all(events.slice(i, i + ORIGIN_BATCH).map(inboundEventOf))
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
  origin: Awaited<ReturnType<typeof originIngestRates>>,
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
