/**
 * What the Worker alone sustains here on the queue path, measured first in a run: an open-loop
 * Slack backfill at rising rates against a gateway whose first-seen events are all shed to the
 * spool queue (bench/queue-path-worker.ts). Every open-loop rate of the run after it is a share of
 * this capacity (bench/capacity-figures.ts): the backfill, the overload, the queue drain's fill.
 * Per rate: p50 / p99 from each request's scheduled time, the share answered 2xx, workerd CPU per
 * answered event. It stops at the first rate whose p99 is over 1 s or whose 2xx share is under
 * 99 %; the capacity is the highest rate that passed.
 *
 * What the path includes: signature check, the claim (Upstash stand-in → Redis), the queue send
 * (Miniflare's queue broker, a Durable Object in the same workerd), the answer; the load generator
 * and the stand-in share the machine's 2 cores with it. What it excludes: the origin, and the
 * spool consumer's work (parked on one batch at the held gate; in a drain it would compete with
 * the front door for workerd's one thread here, on Cloudflare it runs in invocations of its own).
 * @module
 */
import type { WorkerRun } from '../local/stack'
import { type CapacityReport, type CapacityStep, capacityLines } from './capacity-figures'
import { cpuMsOf, isOk, sendSlackBackfill } from './landed'
import { startQueuePathWorker } from './queue-path-worker'
import type { RunDeps } from './run-deps'
import { startSlowProxy } from './slow-proxy'
import { summarize } from './stats'
import { fmt, round, say, sleep } from './util'

/** The rates tried, events/s, in order (BENCH_CAPACITY_RATES); stops at the first that fails. */
const RATES = listFromEnv(
  'BENCH_CAPACITY_RATES',
  [50, 100, 150, 200, 300, 400, 600, 800, 1_200, 1_600],
)
/** Seconds each rate is sent (BENCH_CAPACITY_S). */
const STEP_S = Number(process.env.BENCH_CAPACITY_S ?? 3)
const MAX_P99_MS = 1_000
const MIN_OK_SHARE = 0.99
/** Between two rates: the last one's stragglers answered, the isolate idle again. */
const PAUSE_MS = 1_000

function listFromEnv(name: string, fallback: number[]): number[] {
  const raw = process.env[name]?.trim()
  if (!raw) return fallback
  const values = raw.split(',').map((s) => Number(s.trim()))
  if (values.some((n) => !Number.isInteger(n) || n < 1 || n > 20_000)) {
    throw new Error(`${name} must be a comma-separated list of integers in [1, 20000]`)
  }
  return values
}

/** Measures the capacity once for the run (state.capacity), its lines in the progress and notes. */
export async function measureCapacity(state: RunDeps): Promise<CapacityReport> {
  const capacity = await findQueuePathCapacity(state)
  state.capacity = capacity
  const lines = capacityLines(capacity)
  for (const line of lines.slice(-1)) say(line)
  state.notes.push(...lines)
  return capacity
}

async function findQueuePathCapacity(state: RunDeps): Promise<CapacityReport> {
  const loadAverage1m = round((await import('node:os')).loadavg()[0] ?? 0, 2)
  const proxy = await startSlowProxy(state.stack.origin.url, { concurrency: 1, delayMs: 0 })
  const steps: CapacityStep[] = []
  try {
    const { worker } = await startQueuePathWorker(state, proxy)
    try {
      for (const ratePerS of RATES) {
        const step = await measureRate(state, worker, ratePerS)
        steps.push(step)
        say(
          `capacity ${fmt(ratePerS)}/s: ${fmt(step.okShare * 100, 1)} % 2xx, p50 ${step.p50Ms} ms, ` +
            `p99 ${step.p99Ms} ms from schedule, ${step.workerdCpuMsPerEvent} ms workerd CPU/event` +
            `${step.passed ? '' : ': over the line, stopping'}`,
        )
        if (!step.passed) break
        await sleep(PAUSE_MS)
      }
    } finally {
      await worker.stop()
    }
  } finally {
    await proxy.close()
  }
  const passed = steps.filter((s) => s.passed)
  return {
    capacityPerS: passed.at(-1)?.ratePerS ?? 0,
    steps,
    ceilingFound: steps.some((s) => !s.passed),
    loadAverage1m,
  }
}

async function measureRate(
  state: RunDeps,
  worker: WorkerRun,
  ratePerS: number,
): Promise<CapacityStep> {
  const pids = worker.runtime === 'miniflare' ? worker.runtimePids : []
  const cpuBefore = cpuMsOf(pids)
  const count = Math.round(ratePerS * STEP_S)
  const { events, result } = await sendSlackBackfill(state, worker.url, {
    ratePerS,
    count,
    timeoutS: 10,
  })
  const cpuMs = cpuMsOf(pids) - cpuBefore
  const answerMs = result.openLoop?.answerMs ?? []
  const ok = answerMs.filter((ms, i) => ms >= 0 && isOk(result.statuses[i]))
  const latency = summarize(ok)
  const okShare = ok.length / Math.max(events.length, 1)
  return {
    ratePerS,
    offered: events.length,
    okShare: round(okShare, 4),
    p50Ms: round(latency.p50, 0),
    p99Ms: round(latency.p99, 0),
    workerdCpuMsPerEvent: round(cpuMs / Math.max(ok.length, 1), 2),
    passed: okShare >= MIN_OK_SHARE && latency.p99 <= MAX_P99_MS,
  }
}
