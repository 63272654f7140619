/**
 * The spool consumer's drain against its batch size (the queue settings are chosen from it). For
 * each `max_batch_size` (BENCH_QUEUE_BATCH_SIZES, default 10, 25, 50, 100) a gateway Worker of its own (bench/queue-path-worker.ts: every first-seen event shed to the queue,
 * the consumer parked at a held gate), then twice:
 *   1. a backlog: BENCH_QUEUE_BACKLOG Slack events (default 1,000) sent open loop (at half the
 *      capacity the run measured first), all queued;
 *   2. the gate released: the consumer drains into the origin, through the proxy either as a plain
 *      pass-through ("origin": its own pace, this machine's CPU) or one request at a time, each held
 *      {@link SLOW_DELAY_MS} ("slow origin": a limit in requests/s, as the overload phase's);
 * and times the drain until every acknowledged event is a row, with the origin's and workerd's CPU
 * per event over it. Then the origin alone (no Worker, no proxy) taking batches of
 * {@link CONCURRENCY_BATCH} events from 1, 2, 4, 8, 16 callers at once: what concurrent consumer
 * invocations (`max_concurrency`, which Miniflare does not have: its queue broker hands out one
 * batch at a time) would get from it. `max_batch_timeout` is 0 here: a full backlog makes full batches whatever
 * the wait, and the tail's partial batch would otherwise add a second to a drain of a second or two.
 * @module
 */
import { groupPids } from '../local/proc'
import type { WorkerRun } from '../local/stack'
import { rateFromCapacity } from './capacity-figures'
import { cpuMsOf, isOk, sendSlackBackfill, waitForRows } from './landed'
import { batchRequests } from './overload'
import { startQueuePathWorker } from './queue-path-worker'
import type { VendorEvent } from './requests'
import type { RunDeps } from './run-deps'
import { type ProxyLimits, type SlowProxy, startSlowProxy } from './slow-proxy'
import { fmt, round, say } from './util'

const BATCH_SIZES = sizesFromEnv()
const BACKLOG = Number(process.env.BENCH_QUEUE_BACKLOG ?? 1_000)
/**
 * The backlog is sent at half the queue path's capacity measured first in the run (well inside it),
 * at most this, and at least the capacity sweep's lowest rate.
 */
const FILL = { share: 0.5, min: 50, max: 400 }
/** The slow origin: one request at a time, each held this long (≤ 20 requests/s). */
const SLOW_DELAY_MS = 50
const DRAIN_MAX_S = 60

const ORIGIN_OWN_PACE: ProxyLimits = { concurrency: 1_000, delayMs: 0 }
const SLOW_ORIGIN: ProxyLimits = { concurrency: 1, delayMs: SLOW_DELAY_MS }

export interface DrainResult {
  maxBatchSize: number
  origin: 'own pace' | 'slow'
  events: number
  drainS: number
  eventsPerS: number
  /** The origin process's CPU over the drain ÷ events. */
  originCpuMsPerEvent: number
  /** workerd's (the consumer's) CPU over the drain ÷ events. */
  workerdCpuMsPerEvent: number
  missing: number
}

export interface QueueDrainReport {
  backlog: number
  slowOrigin: string
  maxBatchTimeoutS: 0
  loadAverage1m: number
  results: DrainResult[]
  /** The origin alone, batches of `eventsPerBatch` from `concurrency` callers at once. */
  originByConcurrency: Array<{ concurrency: number; eventsPerBatch: number; eventsPerS: number }>
}

/** Events per batch in the origin's concurrency step. */
const CONCURRENCY_BATCH = 50
const CONCURRENCIES = [1, 2, 4, 8, 16]
const CONCURRENCY_STEP_S = 2

function sizesFromEnv(): number[] {
  const raw = process.env.BENCH_QUEUE_BATCH_SIZES?.trim()
  if (!raw) return [10, 25, 50, 100]
  const values = raw.split(',').map((s) => Number(s.trim()))
  if (values.some((n) => !Number.isInteger(n) || n < 1 || n > 100)) {
    throw new Error(
      'BENCH_QUEUE_BATCH_SIZES must be a comma-separated list of integers in [1, 100]',
    )
  }
  return values
}

export async function measureQueueDrain(state: RunDeps): Promise<QueueDrainReport> {
  const loadAverage1m = round((await import('node:os')).loadavg()[0] ?? 0, 2)
  const proxy = await startSlowProxy(state.stack.origin.url, ORIGIN_OWN_PACE)
  const results: DrainResult[] = []
  try {
    for (const size of BATCH_SIZES) {
      const { worker, warmQueued } = await startQueuePathWorker(state, proxy, {
        queueConsumers: { max_batch_size: size, max_batch_timeout: 0 },
      })
      try {
        results.push(await fillAndDrain(state, proxy, worker, size, 'own pace', warmQueued))
        results.push(await fillAndDrain(state, proxy, worker, size, 'slow', []))
      } finally {
        await worker.stop()
      }
    }
  } finally {
    await proxy.close()
  }
  const originByConcurrency = []
  for (const concurrency of CONCURRENCIES) {
    originByConcurrency.push(await originBatchedAt(state, concurrency))
  }
  return {
    backlog: BACKLOG,
    slowOrigin: `1 request at a time, ${SLOW_DELAY_MS} ms each (≤ ${fmt(1_000 / SLOW_DELAY_MS)} requests/s)`,
    maxBatchTimeoutS: 0,
    loadAverage1m,
    results,
    originByConcurrency,
  }
}

/** The origin alone (closed loop) taking CONCURRENCY_BATCH-event batches from `concurrency` callers. */
async function originBatchedAt(state: RunDeps, concurrency: number) {
  // Enough batches for the step at a few thousand events/s; the loop stops at its duration.
  const events = state.factory.freshSlack(CONCURRENCY_BATCH * 40 * concurrency)
  const result = await state.load.run({
    url: state.stack.origin.url,
    requests: await batchRequests(events, CONCURRENCY_BATCH),
    connections: concurrency,
    durationS: CONCURRENCY_STEP_S,
    timeoutS: 10,
  })
  const eventsPerS = round(
    (result.statuses.filter(isOk).length * CONCURRENCY_BATCH) / Math.max(result.durationS, 0.001),
    0,
  )
  say(
    `origin alone, batches of ${CONCURRENCY_BATCH} from ${concurrency} at once: ${fmt(eventsPerS)} events/s`,
  )
  return { concurrency, eventsPerBatch: CONCURRENCY_BATCH, eventsPerS }
}

async function fillAndDrain(
  state: RunDeps,
  proxy: SlowProxy,
  worker: WorkerRun,
  maxBatchSize: number,
  origin: DrainResult['origin'],
  alreadyQueued: readonly VendorEvent[],
): Promise<DrainResult> {
  proxy.hold()
  proxy.setLimits(origin === 'slow' ? SLOW_ORIGIN : ORIGIN_OWN_PACE)
  const { events: backlog, result: sent } = await sendSlackBackfill(state, worker.url, {
    ratePerS: rateFromCapacity(state.capacity, FILL.share, FILL),
    count: BACKLOG,
    timeoutS: 10,
  })
  const queued = [...alreadyQueued, ...backlog.filter((_, i) => isOk(sent.statuses[i]))]
  const workerdPids = worker.runtime === 'miniflare' ? worker.runtimePids : []
  const originPids = groupPids(state.stack.origin.pid)
  const cpuBefore = { origin: cpuMsOf(originPids), workerd: cpuMsOf(workerdPids) }
  const startedAt = performance.now()
  proxy.release()
  const landed = await waitForRows(state, queued, DRAIN_MAX_S, 50)
  const drainS = (performance.now() - startedAt) / 1000
  const per = (ms: number) => round(ms / Math.max(landed, 1), 2)
  const result: DrainResult = {
    maxBatchSize,
    origin,
    events: queued.length,
    drainS: round(drainS, 2),
    eventsPerS: round(landed / Math.max(drainS, 0.001), 0),
    originCpuMsPerEvent: per(cpuMsOf(originPids) - cpuBefore.origin),
    workerdCpuMsPerEvent: per(cpuMsOf(workerdPids) - cpuBefore.workerd),
    missing: queued.length - landed,
  }
  say(
    `queue drain, max_batch_size ${maxBatchSize}, ${origin} origin: ${fmt(result.events)} events in ` +
      `${result.drainS} s = ${fmt(result.eventsPerS)}/s; CPU per event: origin ` +
      `${result.originCpuMsPerEvent} ms, workerd ${result.workerdCpuMsPerEvent} ms; ${result.missing} missing`,
  )
  return result
}

/** The report's summary lines (state.notes), one per batch size. */
export function drainLines(report: QueueDrainReport): string[] {
  return BATCH_SIZES.map((size) => {
    const at = (origin: DrainResult['origin']) =>
      report.results.find((r) => r.maxBatchSize === size && r.origin === origin)
    const own = at('own pace')
    const slow = at('slow')
    const cell = (r: DrainResult | undefined) =>
      r
        ? `${fmt(r.eventsPerS)} events/s (${r.drainS} s, origin ${r.originCpuMsPerEvent} ms CPU/event, ` +
          `workerd ${r.workerdCpuMsPerEvent} ms${r.missing ? `, ${r.missing} MISSING` : ''})`
        : 'not measured'
    return `queue drain | max_batch_size ${size} | origin at its own pace: ${cell(own)} | slow origin: ${cell(slow)}`
  }).concat(
    `queue drain | the origin alone, batches of ${CONCURRENCY_BATCH} from c callers: ` +
      report.originByConcurrency.map((o) => `c=${o.concurrency} ${fmt(o.eventsPerS)}/s`).join(', '),
  )
}
