/**
 * The gateway's decisions, counted per isolate and flushed to the origin (`POST /v1/decisions`,
 * signed like a forward) at most every DECISION_FLUSH_SECONDS: the console's overview and lookup
 * read them there. Redis-layer duplicates and the gateway's refusals never reach the origin
 * otherwise. A delivery pays a map update; a flush is one subrequest per isolate and interval,
 * run in `waitUntil` after the answer. An isolate that dies before its flush loses those counts,
 * never a message.
 * @module
 */
import {
  type CountedDecision,
  type DecisionBatch,
  DecisionTally,
  REDIS_UNAVAILABLE,
} from '../contract/decision-counts'
import type { OriginConfig, Settings } from './config'
import type { GatewayError } from './errors'
import { forwardBody } from './forward'
import { logProblem } from './log'

/** A flush is small; it never waits longer than this for the origin. */
const FLUSH_TIMEOUT_MS = 3_000
/** From a queue handler, whose batch waits for it: shorter. */
const QUEUE_FLUSH_TIMEOUT_MS = 1_000
/** Flushes one scheduled wait may run back to back while decisions keep coming. */
const MAX_FLUSHES_PER_WAIT = 3
/** A reason is counted when it is a code; free text (an error message) would split the rows. */
const REASON_CODE = /^[a-z0-9_.:-]{1,64}$/

/** Where and how often this isolate's counts go; null origin or 0 seconds: not counted. */
export interface FlushTarget {
  origin: OriginConfig | null
  everySeconds: number
  waitUntil(promise: Promise<unknown>): void
}

/** This isolate's flush target under `settings`, flushing in the event's `waitUntil`. */
export function flushTargetOf(
  settings: Pick<Settings, 'origin' | 'decisionFlushSeconds'>,
  waitUntil: (promise: Promise<unknown>) => void,
): FlushTarget {
  return { origin: settings.origin, everySeconds: settings.decisionFlushSeconds, waitUntil }
}

// One tally per isolate: module state lives as long as the isolate does.
const tally = new DecisionTally()
/**
 * A batch the origin did not take, kept whole, id and all, and sent again before any new one: the
 * origin records each id once, so a flush that timed out after the origin stored it is not counted
 * twice (its counts are late, never doubled; lost only with the isolate).
 */
let unsent: DecisionBatch | null = null
let lastFlushAt = 0
let scheduled = false

/** Counts one decision and makes sure a flush is on its way within the interval. */
export function countDecision(target: FlushTarget, decision: CountedDecision): void {
  if (!target.origin || target.everySeconds <= 0) return
  tallyDecision(tally, decision, Date.now())
  scheduleFlush(target.origin, target)
}

/**
 * For the queue handlers: counts one decision without scheduling anything. workerd holds a queue
 * batch until its `waitUntil` work ends, so a flush there must never sleep out the interval;
 * {@link flushIfDue} sends what is held when it is due.
 */
export function holdDecision(
  settings: Pick<Settings, 'origin' | 'decisionFlushSeconds'>,
  decision: CountedDecision,
): void {
  if (!settings.origin || settings.decisionFlushSeconds <= 0) return
  tallyDecision(tally, decision, Date.now())
}

/**
 * For the queue handlers: sends what this isolate holds (counts, or a batch the origin did not
 * take, then what was counted since) when the interval has passed since the last flush and none
 * is on its way, waiting at most QUEUE_FLUSH_TIMEOUT_MS per request (what it may add to a
 * batch). Not due: the counts wait for a later batch, or a webhook's flush in this isolate. Retries, the queue's decisions, happen while the
 * origin is down, so their first flush fails too: a later batch sends them once it is back.
 */
export function flushIfDue(target: FlushTarget): void {
  const { origin, everySeconds } = target
  if (!origin || everySeconds <= 0 || scheduled || (!unsent && tally.empty)) return
  if (Date.now() - lastFlushAt < everySeconds * 1000) return
  scheduled = true
  lastFlushAt = Date.now()
  target.waitUntil(
    flushHeld(origin).finally(() => {
      scheduled = false
    }),
  )
}

/** A batch the origin did not take first, then what was counted since; stops at a failure. */
async function flushHeld(origin: OriginConfig): Promise<void> {
  for (let i = 0; i < 2 && (unsent || !tally.empty); i++) {
    await flush(origin, QUEUE_FLUSH_TIMEOUT_MS)
    if (unsent) return
  }
}

function scheduleFlush(origin: OriginConfig, target: FlushTarget): void {
  if (scheduled) return
  scheduled = true
  // An isolate's first decision waits a whole interval too: the ones right after it join it.
  if (lastFlushAt === 0) lastFlushAt = Date.now()
  target.waitUntil(flushLoop(origin, target.everySeconds * 1000))
}

/**
 * What a delivery pays on the hot path: its reason kept when it is a code (a failed Redis claim
 * counted as one, whatever its error said), then one map update.
 * Exported for `npm run bench` (bench/decision-tally-loop.ts), which times this in workerd.
 */
export function tallyDecision(into: DecisionTally, decision: CountedDecision, nowMs: number): void {
  const reason = decision.payloadMismatch
    ? 'payload_mismatch'
    : decision.redis === 'unavailable'
      ? REDIS_UNAVAILABLE
      : decision.reason && REASON_CODE.test(decision.reason)
        ? decision.reason
        : undefined
  into.add({ ...decision, reason }, nowMs)
}

/** Why the gateway refused a request, as a code the console groups by. */
export function refusalReason(err: GatewayError): string {
  if (err.code === 'unauthorized') {
    return err.detail.includes('tenant') ? 'foreign_tenant' : 'bad_signature'
  }
  if (err.code === 'invalid_payload') return 'bad_body'
  return err.code
}

/** The channel of a webhook path (`/webhooks/slack/...` → slack), or null for other routes. */
export function channelOfPath(path: string): string | null {
  return /^\/webhooks\/([a-z-]{1,32})(?:\/|$)/.exec(path)?.[1] ?? null
}

async function flushLoop(origin: OriginConfig, everyMs: number): Promise<void> {
  try {
    for (let i = 0; i < MAX_FLUSHES_PER_WAIT && (unsent || !tally.empty); i++) {
      const wait = lastFlushAt + everyMs - Date.now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      lastFlushAt = Date.now()
      await flush(origin, FLUSH_TIMEOUT_MS)
    }
  } finally {
    scheduled = false
  }
}

async function flush(origin: OriginConfig, timeoutMs: number): Promise<void> {
  const batch = unsent ?? tally.take()
  if (!batch) return
  const result = await forwardBody(origin, JSON.stringify(batch), timeoutMs, '/v1/decisions')
  if (result.kind === 'accepted') {
    unsent = null
    return
  }
  unsent = batch
  logProblem('warn', 'decision_counts_not_flushed', {
    status: result.status ?? undefined,
    reason: result.kind === 'failed' ? result.reason : (result.code ?? undefined),
  })
}
