/**
 * Admission control: how many webhook and API requests an isolate works on at once. Shedding
 * (worker/shed/) covers a slow origin; this covers an isolate offered more than it can verify.
 * Past MAX_IN_FLIGHT every request would wait on the same one thread, each answer later than the
 * last, until none is answered in time and the sockets run out. So a request over the bound gets
 * its channel's retry answer (503 + Retry-After) before its signature is checked or anything
 * claimed: a vendor that retries sends it again later, and what is admitted is answered in time. ADMISSION_WAIT_MS > 0 lets it wait that long for a free place first (at most as many
 * waiting as the bound), for a vendor whose deadline leaves room (Twilio's 15 s; it does not retry
 * a 5xx, docs/guarantees.md).
 *
 * Per isolate, in memory, no I/O. A refusal is counted as a decision (decided by `admission`,
 * reason `over_capacity`) and logged once per {@link LOG_EVERY_MS}, with how many there were.
 * @module
 */
import type { MiddlewareHandler } from 'hono'
import { DECISION_HEADER } from '../contract/decision-log'
import { DelayLimit } from './admission-limit'
import { type AdmissionSettings, settingsFor } from './config'
import { countDecision, flushTargetOf } from './decision-counters'
import type { Env } from './env'
import { logProblem } from './log'
import { perIsolate } from './per-isolate'

/**
 * A request still counted this long after it was admitted is one workerd cancelled (its client
 * went away mid-request: the handler's `finally` never runs): it no longer counts. Longer than
 * any request's own budget (a channel's at most 10 s, a forward's at most ORIGIN_TIMEOUT_MS).
 */
export const STALE_AFTER_MS = 60_000
/** Refusals are logged at most once in this long, with their count since the last line. */
export const LOG_EVERY_MS = 10_000
export const OVER_CAPACITY = 'over_capacity'
/**
 * A refused request's body up to this size is read and dropped (no hashing, no parsing), so its
 * connection is left at a request's end for the client's next one; larger or unsized, it is left
 * unread (the connection may go with it).
 */
const DISCARD_MAX_BYTES = 65_536

/** Gives the place back; calling it again does nothing. */
export type Release = () => void

interface Entry {
  admittedAt: number
}

const NO_BOUND: Release = () => {}

export class AdmissionGate {
  private readonly admitted = new Set<Entry>()
  /** Requests waiting for a place, first come first woken. */
  private readonly waiting: Array<() => void> = []
  /** The bound now: MAX_IN_FLIGHT, lowered while the isolate is behind (see {@link DelayLimit}). */
  private readonly limit: DelayLimit

  constructor(
    private readonly settings: AdmissionSettings,
    private readonly now: () => number = Date.now,
  ) {
    this.limit = new DelayLimit(settings, now())
  }

  /** Requests admitted and not yet released (stale ones pruned when the bound is reached). */
  get inFlight(): number {
    return this.admitted.size
  }

  /** How many may be in flight now (at most MAX_IN_FLIGHT). */
  get bound(): number {
    return this.limit.bound
  }

  /**
   * A place (and its release), or null: over the bound, and no place came free within
   * ADMISSION_WAIT_MS (or too many wait already).
   */
  async enter(): Promise<Release | null> {
    const { maxInFlight, maxWaitMs } = this.settings
    const placed = this.enterNow()
    if (placed || maxWaitMs === 0) return placed
    const deadline = this.now() + maxWaitMs
    for (;;) {
      const release = this.tryEnter()
      if (release) return release
      const left = deadline - this.now()
      if (left <= 0 || this.waiting.length >= maxInFlight) return null
      await this.waitForRelease(left)
    }
  }

  /** A place now, or null (no wait): the hot path, without a promise. */
  enterNow(): Release | null {
    return this.settings.maxInFlight === 0 ? NO_BOUND : this.tryEnter()
  }

  private tryEnter(): Release | null {
    const size = this.admitted.size
    if (size * 2 >= this.limit.bound) this.limit.arriving(this.now(), size, this.oldestAt())
    if (this.admitted.size >= this.limit.bound) this.pruneStale()
    if (this.admitted.size >= this.limit.bound) return null
    const entry = { admittedAt: this.now() }
    this.admitted.add(entry)
    this.limit.admitted(this.admitted.size)
    return () => {
      if (!this.admitted.delete(entry)) return
      const at = this.now()
      this.limit.released(entry.admittedAt, at, this.admitted.size)
      // The woken one tries again rather than being handed this place: should workerd have
      // cancelled it meanwhile, no place is lost with it.
      this.waiting.shift()?.()
    }
  }

  /** When the oldest in flight was admitted (the set keeps admission order). */
  private oldestAt(): number {
    for (const entry of this.admitted) return entry.admittedAt
    return this.now()
  }

  /** The set keeps admission order: the stale are its first entries, and the walk stops at a fresh one. */
  private pruneStale(): void {
    const before = this.now() - STALE_AFTER_MS
    for (const entry of this.admitted) {
      if (entry.admittedAt > before) return
      this.admitted.delete(entry)
    }
  }

  /** Until a place is released or `ms` passed; the timer is this request's own, cleared by it. */
  private async waitForRelease(ms: number): Promise<void> {
    let wake: () => void = () => {}
    let timer: ReturnType<typeof setTimeout> | undefined
    await new Promise<void>((resolve) => {
      wake = resolve
      this.waiting.push(wake)
      timer = setTimeout(resolve, ms)
    })
    clearTimeout(timer)
    const at = this.waiting.indexOf(wake)
    if (at >= 0) this.waiting.splice(at, 1)
  }
}

/** This isolate's gate for these settings (workerd hands an isolate's requests the same env). */
export const gateFor = perIsolate((settings: AdmissionSettings) => new AdmissionGate(settings))

/** Refusals since the last log line, and when that was. */
const refusals = { unlogged: 0, loggedAt: Number.NEGATIVE_INFINITY }

type GatewayEnv = { Bindings: Env }

/**
 * The gate as a route's first middleware: admitted, the route runs and its place is given back
 * however it ends (answered, thrown, its body unreadable); refused, `retryLater` answers.
 */
export function admission<E extends GatewayEnv>(
  channel: string,
  retryLater: () => Response,
): MiddlewareHandler<E> {
  return async (c, next) => {
    const settings = settingsFor(c.env)
    const gate = gateFor(settings.admission)
    // The place is taken without a promise when there is one; only the refused wait or retry.
    const release = gate.enterNow() ?? (await gate.enter())
    if (!release) {
      await discardBody(c.req.raw)
      // `executionCtx` throws where there is none (a test's `app.request`): the flush then runs unheld.
      const hold = (promise: Promise<unknown>) => {
        try {
          c.executionCtx.waitUntil(promise)
        } catch {
          void promise
        }
      }
      return refuse(c.env, hold, channel, retryLater)
    }
    try {
      await next()
    } finally {
      release()
    }
  }
}

async function discardBody(request: Request): Promise<void> {
  const length = Number(request.headers.get('content-length') ?? Number.NaN)
  if (!request.body || !(length <= DISCARD_MAX_BYTES)) return
  await request.arrayBuffer().catch(() => {})
}

function refuse(
  env: Env,
  hold: (promise: Promise<unknown>) => void,
  channel: string,
  retryLater: () => Response,
): Response {
  const settings = settingsFor(env)
  countDecision(flushTargetOf(settings, hold), {
    channel,
    decision: 'retry',
    decidedBy: 'admission',
    reason: OVER_CAPACITY,
  })
  noteRefusal(settings.admission, gateFor(settings.admission).bound)
  const reply = retryLater()
  if (!reply.headers.has('retry-after')) reply.headers.set('retry-after', '1')
  reply.headers.set(DECISION_HEADER, 'retry')
  return reply
}

/** One log line per LOG_EVERY_MS at most, however many are refused: an overload is no log flood. */
export function noteRefusal(limits: AdmissionSettings, bound: number, now = Date.now()): void {
  refusals.unlogged++
  if (now - refusals.loggedAt < LOG_EVERY_MS) return
  logProblem('warn', 'admission_refused', {
    refused: refusals.unlogged,
    maxInFlight: limits.maxInFlight,
    bound,
    targetMs: limits.targetMs,
    maxWaitMs: limits.maxWaitMs,
  })
  refusals.unlogged = 0
  refusals.loggedAt = now
}
