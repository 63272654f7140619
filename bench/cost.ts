/**
 * What one event costs the platforms, counted, not estimated (phase `cost`). Three windows, each
 * a step of its own (its rows checked) between two readings of every counter:
 *
 *   first-seen   new events through a gateway whose origin answers (verify, claim, forward, complete);
 *   duplicate    the same events again (answered from Redis);
 *   queued       new events through a gateway that queues every one first (QUEUE_FIRST_CHANNELS=all),
 *                drained by its consumer in batches.
 *
 * After the first-seen and queued windows, the time from a send to its row at a trickle
 * (bench/time-to-row.ts): what queueing first costs in time.
 *
 * The counters: the Worker's own (invocations, subrequests, queue, R2 and KV operations, counted
 * inside workerd by bench/cost-entry.ts), the commands the Upstash stand-in ran
 * (local/upstash-rest.ts), the statements the origin sent through the Neon proxy
 * (local/pg-wire-tally.ts), and the gateway's workerd CPU (/proc). After the load each window waits
 * for the decision-count flush (one subrequest per isolate every DECISION_FLUSH_SECONDS) and for
 * the counters to hold still, so what an event set in motion is in its window.
 * @module
 */
import { loadavg } from 'node:os'
import type { WorkerRun } from '../local/stack'
import { vendorVars } from './config'
import { COUNTING_ENTRY, type WorkerCounts, workerCounts } from './cost-entry'
import { cpuMsOf, isOk } from './landed'
import { replays, signVendorRequests, type VendorEvent } from './requests'
import type { RunDeps } from './run-deps'
import type { Check } from './steps'
import { type TimeToRow, timeToRow } from './time-to-row'
import { round, say, sleep } from './util'

/** Events per window: enough that a 10 ms CPU tick is under 1 % of a window's workerd CPU. */
const EVENTS = Number(process.env.BENCH_COST_EVENTS ?? 600)
/** Closed loop, well inside what the gateway takes here: no window should shed for load. */
const CONCURRENCY = 10
/** The gateway's DECISION_FLUSH_SECONDS (wrangler.toml's), waited out after each window. */
const FLUSH_S = 5
/** Counters that held still this long are taken as settled. */
const QUIET_MS = 1_500

export type CostWindowName = 'first-seen' | 'duplicate' | 'queued'

export interface CostWindow {
  name: CostWindowName
  label: string
  /** Events acknowledged (2xx) in the window: what the counts are divided by. */
  events: number
  seconds: number
  loadAverage1m: number
  /** The gateway's workerd processes over the window (front door and queue consumer). */
  workerCpuMs: number
  /** bench/cost-entry.ts's counters; subrequests named by where they went. */
  worker: WorkerCounts
  /** Commands the Upstash stand-in ran, by name. */
  redis: Record<string, number>
  /** Statements the origin sent Postgres, by label. */
  postgres: Record<string, number>
  checks: Check[]
  /** From a send to its row, at a trickle, after the window (first-seen and queued only). */
  timeToRow?: TimeToRow
}

export interface CostReport {
  decisionFlushSeconds: number
  windows: CostWindow[]
}

/** The counters at one moment. */
interface Reading {
  worker: WorkerCounts
  redis: Record<string, number>
  postgres: Record<string, number>
  cpuMs: number
}

export async function measureCosts(deps: RunDeps): Promise<CostReport> {
  const windows: CostWindow[] = []
  const gateway = await deps.stack.local.startWorker({
    vars: vendorVars(),
    entrySource: COUNTING_ENTRY,
  })
  try {
    await warm(deps, gateway)
    const fresh = deps.factory.fresh(EVENTS)
    const first = await costWindow(deps, gateway, 'first-seen', fresh, 'all')
    first.window.timeToRow = await timeToRow(deps, gateway)
    windows.push(first.window)
    const acknowledged = fresh.filter((_, i) => isOk(first.statuses[i]))
    const again = replays(acknowledged, acknowledged.length)
    windows.push((await costWindow(deps, gateway, 'duplicate', again, 'none')).window)
  } finally {
    await gateway.stop()
  }
  windows.push(await queuedWindow(deps))
  return { decisionFlushSeconds: FLUSH_S, windows }
}

const LABELS: Record<CostWindowName, string> = {
  'first-seen': 'first-seen (the origin answers)',
  duplicate: 'duplicate (answered from Redis)',
  queued: 'first-seen, queued first (QUEUE_FIRST_CHANNELS=all: drained by the consumer in batches)',
}

/** Unmeasured traffic first: the isolate compiled, the pools open, a flush sent. */
async function warm(deps: RunDeps, gateway: WorkerRun): Promise<void> {
  const events = deps.factory.fresh(100)
  await deps.load.run({
    url: gateway.url,
    requests: await signVendorRequests([...events, ...replays(events, 100)]),
    connections: CONCURRENCY,
    durationS: 10,
    timeoutS: 10,
  })
  await settled(gateway)
}

/** The queue path: a gateway of its own that queues every event first, its consumer draining. */
async function queuedWindow(deps: RunDeps): Promise<CostWindow> {
  const worker = await deps.stack.local.startWorker({
    vars: { ...vendorVars(), QUEUE_FIRST_CHANNELS: 'all' },
    entrySource: COUNTING_ENTRY,
  })
  try {
    await warm(deps, worker)
    const events = deps.factory.freshSlack(EVENTS)
    const { window } = await costWindow(deps, worker, 'queued', events, 'all')
    window.timeToRow = await timeToRow(deps, worker)
    return window
  } finally {
    await worker.stop()
  }
}

async function costWindow(
  deps: RunDeps,
  gateway: WorkerRun,
  name: CostWindowName,
  events: VendorEvent[],
  fresh: 'all' | 'none',
): Promise<{ window: CostWindow; statuses: number[] }> {
  const before = await read(deps, gateway)
  const loadAverage1m = round(loadavg()[0] ?? 0, 2)
  const { result, statuses } = await deps.measure({
    id: `cost: ${name}@${CONCURRENCY}`,
    scenario: `cost per event: ${LABELS[name]}`,
    kind: 'scenario',
    target: 'gateway, counting entry (Miniflare)',
    url: gateway.url,
    concurrency: CONCURRENCY,
    requests: await signVendorRequests(events),
    events,
    fresh,
    durationS: 30,
  })
  await settled(gateway)
  const after = await read(deps, gateway)
  const window: CostWindow = {
    name,
    label: LABELS[name],
    events: result.ok2xx,
    seconds: result.durationS,
    loadAverage1m,
    workerCpuMs: after.cpuMs - before.cpuMs,
    worker: named(deps, gateway, difference(before.worker, after.worker)),
    redis: difference(before.redis, after.redis),
    postgres: difference(before.postgres, after.postgres),
    checks: result.checks,
  }
  say(
    `cost ${name}: ${window.events} events, ${round(window.workerCpuMs / Math.max(window.events, 1), 2)} ms ` +
      `workerd CPU each (load average ${loadAverage1m})`,
  )
  return { window, statuses }
}

async function read(deps: RunDeps, gateway: WorkerRun): Promise<Reading> {
  return {
    worker: await workerCounts(gateway.url),
    redis: deps.stack.redisLayer.commandCounts(),
    postgres: deps.stack.database.statementCounts(),
    cpuMs: cpuMsOf(gateway.runtime === 'miniflare' ? gateway.runtimePids : []),
  }
}

/** After the load: the decision flush waited out, then until the Worker's counters hold still. */
async function settled(gateway: WorkerRun): Promise<void> {
  await sleep(FLUSH_S * 1_000 + 500)
  let last = JSON.stringify(await workerCounts(gateway.url))
  const until = Date.now() + 20_000
  while (Date.now() < until) {
    await sleep(QUIET_MS)
    const now = JSON.stringify(await workerCounts(gateway.url))
    if (now === last) return
    last = now
  }
}

function difference(
  before: Record<string, number>,
  after: Record<string, number>,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([name, n]) => [name, n - (before[name] ?? 0)] as const)
      .filter(([, n]) => n !== 0),
  )
}

/** `subrequest http://127.0.0.1:port/path` → `subrequest Upstash /path`, `subrequest origin /v1/…`. */
function named(deps: RunDeps, gateway: WorkerRun, counts: WorkerCounts): WorkerCounts {
  const upstash = new URL(deps.stack.redisLayer.url).origin
  const out: WorkerCounts = {}
  for (const [name, n] of Object.entries(counts)) {
    let label = name
    if (name.startsWith('subrequest ')) {
      const url = new URL(name.slice('subrequest '.length))
      const where =
        url.origin === upstash ? 'Upstash' : url.origin === gateway.url ? 'self' : 'origin'
      label = `subrequest ${where} ${url.pathname}`
    }
    out[label] = (out[label] ?? 0) + n
  }
  return out
}
