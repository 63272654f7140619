/**
 * How this isolate sees the origin, and whether a first-seen event should wait for it or go
 * straight to the spool queue ("shed": the vendor is answered in milliseconds, the queue drains
 * at the origin's pace). Per isolate, in memory, no I/O: a decision costs a few comparisons.
 *
 * A circuit breaker with a concurrency cap:
 * A forward is waited for at most `slowMs` while shedding is on: past that it is a bad forward
 * whatever the origin does next, so the event goes to the queue and the vendor is answered then,
 * the forward running on in the background (should it land, the queued copy is a duplicate; the
 * origin's ingest is idempotent); should the queue refuse the event, the forward is waited for
 * after all (worker/deliver.ts). An answer thus never waits on the origin much longer than
 * `slowMs`, not even in the first moments of an overload before the breaker opens.
 *
 *   closed     forward, unless this isolate already has `maxInflight` forwards in flight (then
 *              shed this one: the origin is not keeping up, and one more only waits longer).
 *              `tripAfter` bad forwards in a row (failed, or slower than `slowMs`) open it, and
 *              so do `tripAfter` forwards still in flight after `slowMs`: a slow origin is seen
 *              at `slowMs`, not only when the forward budget runs out.
 *   open       shed everything for `openMs`.
 *   half-open  then one forward at a time is let through as a probe, the rest shed; a good probe
 *              closes it, a bad one opens it again for `openMs`. Closed after a probe, it starts
 *              with one forward in flight at a time, the cap doubling with each good forward up
 *              to `maxInflight` (slow start): one fast probe against an origin still behind
 *              costs a few slow answers, not a second's worth of them.
 *
 * Why a breaker and not an adaptive limit (Netflix's gradient / Vegas): an isolate sees only its
 * share of the traffic, often a few requests a second, too few round-trip samples for a gradient
 * to settle; a breaker acts on a handful of outcomes and its states are easy to read in a log. The
 * in-flight cap is the limit part, fixed rather than adaptive.
 * @module
 */
import { perIsolate } from '../per-isolate'

export interface BreakerSettings {
  /** Bad forwards in a row that open the breaker; 0: shedding off (always forward). */
  tripAfter: number
  /** A forward slower than this is bad, even if it succeeded; with shedding on, no forward is
   * waited for longer (the event is queued instead). */
  slowMs: number
  /** How long it stays open before a probe. */
  openMs: number
  /** Forwards in flight in this isolate beyond which a new event is shed; 0: no cap. */
  maxInflight: number
}

export type BreakerState = 'closed' | 'open' | 'half-open'

/** What to do with one first-seen event: forward it (and report how it went) or shed it. */
export type Admission =
  | {
      forward: true
      /** How long to wait for the origin before queueing instead (Infinity: shedding off). */
      waitMs: number
      done(outcome: { ms: number; ok: boolean }): void
    }
  | { forward: false; reason: 'shed_open' | 'shed_inflight' }

export class OriginBreaker {
  private state: BreakerState = 'closed'
  private badInARow = 0
  private openedAt = 0
  /** When each forward in flight started (at most `maxInflight` of them while closed). */
  private readonly inflight = new Set<{ startedAt: number }>()
  private probing = false
  /** The in-flight cap while closed: from 1 after a probe, doubling with each good forward. */
  private limit = Number.POSITIVE_INFINITY

  constructor(
    private readonly settings: BreakerSettings,
    private readonly now: () => number = Date.now,
  ) {}

  get current(): BreakerState {
    if (this.state === 'open' && this.now() - this.openedAt >= this.settings.openMs) {
      this.state = 'half-open'
    }
    return this.state
  }

  admit(): Admission {
    if (this.settings.tripAfter === 0) return this.forward(false)
    const state = this.current
    if (state === 'open') return { forward: false, reason: 'shed_open' }
    if (state === 'half-open') {
      if (this.probing) return { forward: false, reason: 'shed_open' }
      this.probing = true
      return this.forward(true)
    }
    if (this.stuckInflight() >= this.settings.tripAfter) {
      this.open()
      return { forward: false, reason: 'shed_open' }
    }
    if (this.inflight.size >= this.cap()) return { forward: false, reason: 'shed_inflight' }
    return this.forward(false)
  }

  private cap(): number {
    const { maxInflight } = this.settings
    return Math.min(this.limit, maxInflight > 0 ? maxInflight : Number.POSITIVE_INFINITY)
  }

  /** Forwards in flight for longer than `slowMs` already: each will be a slow one. */
  private stuckInflight(): number {
    const since = this.now() - this.settings.slowMs
    let stuck = 0
    for (const forward of this.inflight) if (forward.startedAt <= since) stuck++
    return stuck
  }

  private open(): void {
    this.state = 'open'
    this.openedAt = this.now()
  }

  private forward(probe: boolean): Admission {
    const entry = { startedAt: this.now() }
    this.inflight.add(entry)
    let reported = false
    const waitMs = this.settings.tripAfter === 0 ? Number.POSITIVE_INFINITY : this.settings.slowMs
    return {
      forward: true,
      waitMs,
      done: ({ ms, ok }) => {
        if (reported) return
        reported = true
        this.inflight.delete(entry)
        if (probe) this.probing = false
        this.record(ok && ms < this.settings.slowMs, probe)
      },
    }
  }

  private record(good: boolean, probe: boolean): void {
    if (this.settings.tripAfter === 0) return
    if (good) {
      this.badInARow = 0
      // Only the probe closes a half-open breaker: a forward let through before it opened
      // proves nothing about now.
      if (probe) {
        this.state = 'closed'
        this.limit = 1
      } else if (this.state === 'closed') {
        this.limit = Math.min(this.limit * 2, this.settings.maxInflight || Number.POSITIVE_INFINITY)
      }
      return
    }
    this.badInARow++
    if (probe || (this.state === 'closed' && this.badInARow >= this.settings.tripAfter)) {
      this.open()
    }
  }
}

/**
 * This isolate's breaker for these settings (one per isolate: workerd hands every request of an
 * isolate the same env, so the same parsed settings object).
 */
export const breakerFor = perIsolate((settings: BreakerSettings) => new OriginBreaker(settings))
