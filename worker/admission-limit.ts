/**
 * The admission gate's bound (worker/admission.ts), set by the isolate's own delay rather than
 * sized per machine. A count alone cannot tell a busy isolate from a drowning one: 256 in flight is
 * idle on one box and seconds behind on another. What does tell is how long an admitted request
 * takes. When the isolate's one thread is past its capacity, every continuation waits behind the
 * others, so even the quickest request of a moment is slow; a slow origin makes only the requests
 * that wait on it slow (and shedding waits for a forward at most SHED_SLOW_MS).
 *
 * So, as CoDel does for a queue: per {@link INTERVAL_MS}, the quickest request released (time from
 * admission to release). Above ADMISSION_TARGET_MS, with at least half the bound in flight, the
 * isolate is behind: the bound drops to what was in flight × target ÷ that time (never under
 * {@link MIN_BOUND}); a step judges only requests admitted after the last drop, which waited in
 * what that drop left (the ones before it are slow for what it already cut). At or under the
 * target the bound grows back by √bound a step, up to MAX_IN_FLIGHT, the hard ceiling. An isolate
 * swamped at once may release nothing for a while: that stall lowers the bound on an arrival
 * ({@link STALL_TARGETS}). No timers: a step is taken on a release or an arrival, on the clock it
 * reads (workerd's, which moves with I/O).
 * @module
 */
import type { AdmissionSettings } from './config'

/** The window whose quickest request is judged (CoDel's interval). */
export const INTERVAL_MS = 100
/** The bound never drops below this: a few in flight cannot be what keeps the thread behind. */
export const MIN_BOUND = 8
/**
 * No release at all for this many targets, half the bound in flight: the isolate is stalled
 * (swamped at once, its thread busy with what piles up): the bound drops at the next arrival,
 * without waiting for a release to measure it.
 */
export const STALL_TARGETS = 5

export class DelayLimit {
  private limit: number
  private windowStart: number
  /** The quickest release of the window, of requests admitted since {@link droppedAt}. */
  private windowMin = Number.POSITIVE_INFINITY
  /** The most in flight at once in the window. */
  private windowPeak = 0
  private droppedAt = Number.NEGATIVE_INFINITY
  private releasedAt: number

  constructor(
    private readonly settings: AdmissionSettings,
    now: number,
  ) {
    this.limit = settings.maxInFlight
    this.windowStart = now
    this.releasedAt = now
  }

  /** How many may be in flight now. */
  get bound(): number {
    return Math.floor(this.limit)
  }

  /**
   * A request arrives at `now` with `inFlight` in flight, the oldest admitted at `oldestAt`: none
   * released since that one came in, STALL_TARGETS targets ago, is a stall, and the bound drops
   * before any release measures it (a burst into an idle isolate is no stall: its oldest is new).
   */
  arriving(now: number, inFlight: number, oldestAt: number): void {
    const { targetMs } = this.settings
    const quiet = now - Math.max(this.releasedAt, this.droppedAt, oldestAt)
    if (targetMs === 0 || quiet < STALL_TARGETS * targetMs) return
    const bound = this.bound
    if (inFlight * 2 < bound || bound <= MIN_BOUND) return
    this.drop((Math.min(bound, inFlight) * targetMs) / quiet, now, inFlight)
  }

  /** A request was admitted; `inFlight` counts it. */
  admitted(inFlight: number): void {
    if (inFlight > this.windowPeak) this.windowPeak = inFlight
  }

  /** A request admitted at `admittedAt` was released at `now`, `inFlight` left. */
  released(admittedAt: number, now: number, inFlight: number): void {
    if (this.settings.targetMs === 0) return
    this.releasedAt = now
    if (admittedAt >= this.droppedAt && now - admittedAt < this.windowMin) {
      this.windowMin = now - admittedAt
    }
    if (now - this.windowStart < INTERVAL_MS) return
    if (this.windowMin !== Number.POSITIVE_INFINITY) this.step(now)
    this.windowStart = now
    this.windowMin = Number.POSITIVE_INFINITY
    this.windowPeak = inFlight
  }

  private step(now: number): void {
    const { targetMs, maxInFlight } = this.settings
    if (this.windowMin <= targetMs) {
      this.limit = Math.min(maxInFlight, this.limit + Math.max(1, Math.sqrt(this.limit)))
      return
    }
    // Only a bound half used is lowered (as Netflix's limiters do): with fewer in flight the
    // requests are few and slow (a slow origin, a few clients in a loop), not piling up.
    const bound = this.bound
    if (this.windowPeak * 2 < bound || bound <= MIN_BOUND) return
    this.drop((Math.min(bound, this.windowPeak) * targetMs) / this.windowMin, now, this.windowPeak)
  }

  private drop(to: number, now: number, inFlight: number): void {
    this.limit = Math.max(MIN_BOUND, to)
    this.droppedAt = now
    this.windowStart = now
    this.windowMin = Number.POSITIVE_INFINITY
    this.windowPeak = inFlight
  }
}
