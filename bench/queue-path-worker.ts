/**
 * A gateway Worker whose first-seen events all take the queue path: verify, claim, send to the
 * spool queue, answer. Used by the capacity sweep (bench/capacity.ts: how fast that path goes on
 * this machine) and the queue drain (bench/queue-drain.ts: a backlog of queued events to drain).
 *
 * How: its origin is behind the slow proxy with the gate held (bench/slow-proxy.ts), so nothing
 * reaches the origin; the breaker opens on the first forward in flight past SHED_SLOW_MS (one is
 * enough: SHED_AFTER_FAILURES=1) and stays open for SHED_OPEN_MS (10 min, longer than any use
 * here), so every later first-seen event is shed to the queue without a forward. The shedding
 * settings are the Worker's own (worker/shed/), set here through its vars, not changed.
 * ORIGIN_TIMEOUT_MS at its maximum (60 s) keeps the spool consumer's first batch waiting at the
 * gate, and Miniflare delivers a queue's batches one after another (see docs/benchmark.md), so
 * the consumer stays parked on that one batch: the queue only grows, and the consumer costs no CPU
 * while the gate is held. Releasing the gate lets the backlog drain.
 * @module
 */
import type { WorkerRun } from '../local/stack'
import type { QueueConsumerOverrides } from '../local/wrangler-config'
import { vendorVars } from './config'
import { isOk, sendSlackBackfill } from './landed'
import type { VendorEvent } from './requests'
import type { RunDeps } from './run-deps'
import type { SlowProxy } from './slow-proxy'

/** The Worker's vars on top of the bench's: see the module comment. */
const QUEUE_PATH_VARS = {
  SHED_AFTER_FAILURES: '1',
  SHED_SLOW_MS: '50',
  SHED_OPEN_MS: '600000',
  ORIGIN_TIMEOUT_MS: '60000',
}

/**
 * Unmeasured events that open the breaker (and warm the isolate) before anything is measured, at
 * the capacity sweep's lowest rate: this Worker also serves that sweep, before any capacity is known.
 */
const WARM_EVENTS = 100
const WARM_RATE_PER_S = 50

export interface QueuePathWorker {
  worker: WorkerRun
  /** The warm-up's acknowledged events: queued too, they drain with the first backlog. */
  warmQueued: VendorEvent[]
}

/**
 * Starts the Worker in front of `proxy` (held here), and opens its breaker with a short warm-up;
 * the caller stops it. `entrySource`: the bundle behind another entry (the cost phase's counting
 * one, bench/cost-entry.ts).
 */
export async function startQueuePathWorker(
  state: RunDeps,
  proxy: SlowProxy,
  options: {
    queueConsumers?: QueueConsumerOverrides
    entrySource?: string
    /** More of the Worker's vars (the admission phase's bound), under the queue path's. */
    vars?: Record<string, string>
  } = {},
): Promise<QueuePathWorker> {
  proxy.hold()
  const { vars, ...rest } = options
  const worker = await state.stack.local.startWorker({
    originUrl: proxy.url,
    vars: { ...vendorVars(), ...vars, ...QUEUE_PATH_VARS },
    ...rest,
  })
  try {
    // The first few forward and wait at the gate until the sender's budget runs out (then they are
    // queued too); every one after SHED_SLOW_MS is shed. Waits for all: ~2 s.
    const { events, result } = await sendSlackBackfill(state, worker.url, {
      ratePerS: WARM_RATE_PER_S,
      count: WARM_EVENTS,
      timeoutS: 10,
    })
    const warmQueued = events.filter((_, i) => isOk(result.statuses[i]))
    return { worker, warmQueued }
  } catch (err) {
    await worker.stop()
    throw err
  }
}
