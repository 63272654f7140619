/**
 * The gateway's decisions as counts: what each Worker isolate adds up between flushes and sends to
 * the origin (`POST /v1/decisions`), where the console reads them. Per minute, channel, decision,
 * deciding layer and reason: a count and a histogram of the decision time in fixed buckets. Plus a
 * bounded sample of keyed decisions (delivery key, decision, layer), so a lookup can say which
 * layer answered each delivery of a message. Keys, codes and timings only: never a body.
 *
 * Counting costs a map update per delivery; the flush is one subrequest per isolate every few
 * seconds, never one per delivery. An isolate that dies before its flush loses those counts (and
 * samples), never a message.
 * @module
 */
import * as v from 'valibot'

/** Upper bounds (ms) of the decision-time buckets; a last one counts everything slower. */
export const MS_BUCKETS = [5, 20, 50, 200, 1000] as const
export const HISTOGRAM_SIZE = MS_BUCKETS.length + 1

/** Distinct (minute, channel, decision, layer, reason) rows an isolate holds at most. */
export const MAX_TALLY_ROWS = 2_000
/** Keyed decisions kept between two flushes at most; more are counted, not kept. */
export const MAX_SAMPLED_KEYS = 200

/**
 * The decision counted when the spool consumer gives a queued event back to its queue to try
 * again (the origin failed it), decided by the gateway, with the failure's kind as its reason:
 * the console's "retried (last hour)". A retry is not a delivery: the overview's columns leave it
 * out.
 */
export const SPOOL_RETRIED = 'retried'

/**
 * The reason counted for a delivery whose Redis claim failed (Redis down, slow or erroring, so
 * Postgres decided alone): the error itself is free text, so the count carries this code instead.
 */
export const REDIS_UNAVAILABLE = 'redis_unavailable'

/** What is counted of one decision. */
export interface CountedDecision {
  channel: string
  decision: string
  decidedBy: string
  reason?: string
  /** The claim's state as the decision log says it: `unavailable` is counted as {@link REDIS_UNAVAILABLE}. */
  redis?: string
  deliveryKey?: string
  payloadMismatch?: boolean
  /** A mismatch's hashes: the one kept for the key, and this delivery's. */
  storedHash?: string
  offeredHash?: string
  /** How long the gateway took to decide; absent for refusals timed by nobody. */
  ms?: number
}

const short = (max: number) => v.pipe(v.string(), v.maxLength(max))
const count = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(Number.MAX_SAFE_INTEGER))

const TallyRow = v.strictObject({
  /** The minute, as unix seconds divisible by 60. */
  minute: v.pipe(v.number(), v.integer(), v.minValue(0)),
  channel: v.pipe(short(32), v.minLength(1)),
  decision: v.pipe(short(32), v.minLength(1)),
  decidedBy: v.pipe(short(16), v.minLength(1)),
  reason: short(64),
  count,
  histogram: v.pipe(v.array(count), v.length(HISTOGRAM_SIZE)),
})

const SampledKey = v.strictObject({
  deliveryKey: v.pipe(short(512), v.minLength(1)),
  channel: v.pipe(short(32), v.minLength(1)),
  decision: v.pipe(short(32), v.minLength(1)),
  decidedBy: v.pipe(short(16), v.minLength(1)),
  reason: short(64),
  payloadMismatch: v.boolean(),
  storedHash: v.optional(short(64)),
  offeredHash: v.optional(short(64)),
  ms: count,
  /** Unix ms. */
  at: count,
})

export const DecisionBatch = v.strictObject({
  /**
   * A random id per batch (a UUID): the origin records a batch once, so a flush resent after a
   * timeout, or a signed request replayed within its five minutes, adds nothing twice.
   */
  id: v.pipe(v.string(), v.regex(/^[0-9a-f-]{36}$/)),
  rows: v.pipe(v.array(TallyRow), v.maxLength(MAX_TALLY_ROWS)),
  keys: v.pipe(v.array(SampledKey), v.maxLength(MAX_SAMPLED_KEYS)),
  /** Decisions not counted because the tally was full, and keys not sampled. */
  dropped: count,
})
export type DecisionBatch = v.InferOutput<typeof DecisionBatch>
export type TallyRow = v.InferOutput<typeof TallyRow>

/** The histogram bucket of a decision time. */
export function msBucket(ms: number): number {
  const i = MS_BUCKETS.findIndex((bound) => ms <= bound)
  return i === -1 ? MS_BUCKETS.length : i
}

/** Reasons are codes: anything else is cut to the column's width. */
const reasonOf = (decision: CountedDecision) => (decision.reason ?? '').slice(0, 64)

/**
 * One isolate's counts since its last flush. `take()` hands them over, as a batch with an id of
 * its own, and starts afresh (bounded like everything else).
 */
export class DecisionTally {
  private rows = new Map<string, TallyRow>()
  private keys: DecisionBatch['keys'] = []
  private dropped = 0

  get empty(): boolean {
    return this.rows.size === 0 && this.dropped === 0
  }

  add(decision: CountedDecision, nowMs: number): void {
    const minute = Math.floor(nowMs / 60_000) * 60
    const reason = reasonOf(decision)
    const id = `${minute}|${decision.channel}|${decision.decision}|${decision.decidedBy}|${reason}`
    let row = this.rows.get(id)
    if (!row) {
      if (this.rows.size >= MAX_TALLY_ROWS) {
        this.dropped++
        return
      }
      row = {
        minute,
        channel: decision.channel.slice(0, 32),
        decision: decision.decision,
        decidedBy: decision.decidedBy,
        reason,
        count: 0,
        histogram: new Array<number>(HISTOGRAM_SIZE).fill(0),
      }
      this.rows.set(id, row)
    }
    row.count++
    if (decision.ms !== undefined) {
      const bucket = msBucket(decision.ms)
      row.histogram[bucket] = (row.histogram[bucket] ?? 0) + 1
    }
    if (decision.deliveryKey) this.sample(decision, reason, nowMs)
  }

  take(): DecisionBatch | null {
    if (this.empty) return null
    const batch = {
      id: crypto.randomUUID(),
      rows: [...this.rows.values()],
      keys: this.keys,
      dropped: this.dropped,
    }
    this.rows = new Map()
    this.keys = []
    this.dropped = 0
    return batch
  }

  private sample(decision: CountedDecision, reason: string, nowMs: number): void {
    if (this.keys.length >= MAX_SAMPLED_KEYS) return
    this.keys.push({
      deliveryKey: (decision.deliveryKey as string).slice(0, 512),
      channel: decision.channel.slice(0, 32),
      decision: decision.decision,
      decidedBy: decision.decidedBy,
      reason,
      payloadMismatch: decision.payloadMismatch === true,
      ...(decision.storedHash ? { storedHash: decision.storedHash.slice(0, 64) } : {}),
      ...(decision.offeredHash ? { offeredHash: decision.offeredHash.slice(0, 64) } : {}),
      ms: Math.max(0, Math.round(decision.ms ?? 0)),
      at: nowMs,
    })
  }
}
