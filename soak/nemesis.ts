/**
 * The nemesis: real faults on the fault suite's stack (test/faults/support/fault-stack.ts), on a
 * schedule drawn from the seed ({@link planFaults}). Each piece of the stack has its own line of
 * faults, one after another with gaps between; the lines run side by side, so faults on
 * different pieces overlap (Redis paused while an origin restarts, Postgres down during a poison
 * window...). Every fault heals before the load ends.
 *
 * | kind                   | piece      | what it does                                               |
 * | ---------------------- | ---------- | ---------------------------------------------------------- |
 * | redis-kill             | redis      | SIGKILL the redis-server; started again (empty) after      |
 * | redis-pause            | redis      | SIGSTOP it; SIGCONT after                                  |
 * | redis-flush            | redis      | FLUSHALL: every claim gone at once                         |
 * | redis-slow             | latency    | the Upstash stand-in answers 200-1500 ms late              |
 * | origin-kill            | origin-a   | SIGKILL the origin behind the balancer; restarted after    |
 * | two-origins-one-killed | origin-b   | a second pod joins the balancer, then is SIGKILLed         |
 * | postgres-restart       | postgres   | Postgres stopped (fast or immediate), started after        |
 * | neon-drop              | neon-proxy | the Neon proxy cuts every connection, every 200-600 ms     |
 * | poison                 | poison     | the balancer answers 5xx for one poison tag (1/10 of them) |
 *
 * A restart takes what it takes (tsx compiling under load): the next fault on the same piece
 * waits for it, so the schedule is the seed's and the wall clock is the machine's.
 * @module
 */
import { delay } from '../local/processes'
import type { FaultStack } from '../test/faults/support/fault-stack'
import type { History } from './history'
import { POISON_TAGS, poisonTag } from './messages'
import type { Rng } from './rng'

export const FAULT_KINDS = [
  'redis-kill',
  'redis-pause',
  'redis-flush',
  'redis-slow',
  'origin-kill',
  'two-origins-one-killed',
  'postgres-restart',
  'neon-drop',
  'poison',
  'consumer-fail',
] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

type Piece =
  | 'redis'
  | 'latency'
  | 'origin-a'
  | 'origin-b'
  | 'postgres'
  | 'neon-proxy'
  | 'poison'
  | 'consumer'

export interface PlannedFault {
  n: number
  kind: FaultKind
  piece: Piece
  /** ms after the load starts. */
  at: number
  durationMs: number
  /** Kind-specific: latency ms, poison tag and status, Postgres stop mode. */
  detail: Record<string, string | number>
}

interface Line {
  piece: Piece
  kinds: ReadonlyArray<readonly [FaultKind, number]>
  /** Pause before each fault, ms. */
  gapMs: readonly [number, number]
}

const LINES: readonly Line[] = [
  {
    piece: 'redis',
    kinds: [
      ['redis-kill', 2],
      ['redis-pause', 2],
      ['redis-flush', 1],
    ],
    gapMs: [3_000, 9_000],
  },
  { piece: 'latency', kinds: [['redis-slow', 1]], gapMs: [4_000, 12_000] },
  { piece: 'origin-a', kinds: [['origin-kill', 1]], gapMs: [4_000, 12_000] },
  { piece: 'origin-b', kinds: [['two-origins-one-killed', 1]], gapMs: [5_000, 15_000] },
  { piece: 'postgres', kinds: [['postgres-restart', 1]], gapMs: [5_000, 15_000] },
  { piece: 'neon-proxy', kinds: [['neon-drop', 1]], gapMs: [4_000, 12_000] },
  { piece: 'poison', kinds: [['poison', 1]], gapMs: [3_000, 10_000] },
  { piece: 'consumer', kinds: [['consumer-fail', 1]], gapMs: [5_000, 15_000] },
]

/** How long each kind lasts, ms (a flush is over at once). */
const DURATION_MS: Record<FaultKind, readonly [number, number]> = {
  'redis-kill': [1_000, 5_000],
  'redis-pause': [500, 4_000],
  'redis-flush': [0, 0],
  'redis-slow': [2_000, 8_000],
  'origin-kill': [500, 4_000],
  'two-origins-one-killed': [2_000, 8_000],
  'postgres-restart': [500, 5_000],
  'neon-drop': [1_000, 4_000],
  // Long enough, at times, for a poisoned event to use up its queue attempts (20 at 1-2 s:
  // 20-40 s) and die: those are recorded in channel_failures and replayed after healing.
  poison: [3_000, 45_000],
  // Every forward and dead-letter report of the queue's consumers fails (5xx) for a while.
  'consumer-fail': [2_000, 15_000],
}

/** 5xx only: a 4xx from the origin is a permanent refusal, dead-lettered at once by design. */
const POISON_STATUSES = [500, 502, 503] as const

/**
 * The schedule: per piece, faults with gaps, starting after `warmupMs`, each over by
 * `healByMs` (a fault that would run past it is shortened, or left out when it has no room).
 */
export function planFaults(
  rng: Rng,
  settings: { warmupMs: number; healByMs: number },
): PlannedFault[] {
  const faults: Omit<PlannedFault, 'n'>[] = []
  for (const line of LINES) {
    const draw = rng.stream(line.piece)
    let at = settings.warmupMs + draw.int(0, line.gapMs[1])
    for (;;) {
      const kind = draw.weighted(line.kinds)
      const [min, max] = DURATION_MS[kind]
      const durationMs = Math.min(draw.int(min, max), settings.healByMs - at)
      if (durationMs < min || at >= settings.healByMs) break
      faults.push({ kind, piece: line.piece, at, durationMs, detail: detailOf(draw, kind) })
      at += durationMs + draw.int(line.gapMs[0], line.gapMs[1])
    }
  }
  return faults
    .sort((a, b) => a.at - b.at || a.piece.localeCompare(b.piece))
    .map((fault, i) => ({ n: i + 1, ...fault }))
}

function detailOf(rng: Rng, kind: FaultKind): Record<string, string | number> {
  switch (kind) {
    case 'redis-slow':
      return { latencyMs: rng.int(200, 1_500) }
    case 'postgres-restart':
      return { mode: rng.pick(['fast', 'immediate'] as const) }
    case 'neon-drop':
      return { everyMs: rng.int(200, 600) }
    case 'poison':
      return { tag: rng.int(0, POISON_TAGS - 1), status: rng.pick(POISON_STATUSES) }
    case 'consumer-fail':
      return { status: rng.pick(POISON_STATUSES) }
    default:
      return {}
  }
}

/** A fault as it happened: what the table and the history say about it. */
export interface FaultRun extends PlannedFault {
  startedAt: number
  endedAt: number
  /** What went wrong injecting or healing it (the run still heals everything at the end). */
  error?: string
}

export class Nemesis {
  /** Fault kinds in effect now, with how many of each. */
  private readonly active = new Map<FaultKind, number>()
  readonly done: FaultRun[] = []

  constructor(
    private readonly stack: FaultStack,
    private readonly history: History,
  ) {}

  /** Kinds in effect right now (the generator stamps each attempt with them). */
  faults(): FaultKind[] {
    return [...this.active.keys()]
  }

  /**
   * Runs the schedule (one line per piece, side by side) from now, starting no fault after
   * `signal` aborts; resolves when all have healed.
   */
  async run(plan: readonly PlannedFault[], signal?: AbortSignal): Promise<void> {
    const startedAt = Date.now()
    const pieces = [...new Set(plan.map((f) => f.piece))]
    await Promise.all(
      pieces.map(async (piece) => {
        for (const fault of plan.filter((f) => f.piece === piece)) {
          const wait = startedAt + fault.at - Date.now()
          if (wait > 0) await delay(wait)
          if (signal?.aborted) return
          await this.apply(fault)
        }
      }),
    )
  }

  private async apply(fault: PlannedFault): Promise<void> {
    const run: FaultRun = { ...fault, startedAt: this.history.now(), endedAt: 0 }
    this.history.write({
      type: 'fault',
      phase: 'start',
      fault: fault.n,
      kind: fault.kind,
      detail: fault.detail,
    })
    this.active.set(fault.kind, (this.active.get(fault.kind) ?? 0) + 1)
    try {
      await this.inject(fault)
    } catch (err) {
      run.error = String(err)
    } finally {
      const left = (this.active.get(fault.kind) ?? 1) - 1
      if (left > 0) this.active.set(fault.kind, left)
      else this.active.delete(fault.kind)
      run.endedAt = this.history.now()
      this.done.push(run)
      this.history.write({
        type: 'fault',
        phase: 'end',
        fault: fault.n,
        kind: fault.kind,
        ...(run.error ? { error: run.error } : {}),
      })
    }
  }

  /** Breaks the piece, waits the fault's duration, heals it (the healing in a finally). */
  private async inject(fault: PlannedFault): Promise<void> {
    const { stack } = this
    const { detail } = fault
    /** `damage`, then the fault's duration, then `heal`, even when the wait is cut short. */
    const hold = async (damage: () => unknown, heal: () => unknown) => {
      await damage()
      try {
        await delay(fault.durationMs)
      } finally {
        await heal()
      }
    }
    const { redis, balancer } = stack
    const [a, b] = stack.origins
    switch (fault.kind) {
      case 'redis-kill':
        return hold(redis.kill, redis.start)
      case 'redis-pause':
        return hold(redis.pause, redis.resume)
      case 'redis-flush':
        return redis.flushAll()
      case 'redis-slow':
        return hold(
          () => stack.redisLayer.setLatency(Number(detail.latencyMs)),
          () => stack.redisLayer.setLatency(0),
        )
      case 'origin-kill':
        return hold(
          () => a.kill('SIGKILL'),
          () => a.restart(),
        )
      case 'two-origins-one-killed':
        balancer.setBackends([a.url, b.url])
        try {
          // A moment of two healthy pods, then one of them dies under the balancer's feet.
          await delay(Math.min(1_000, fault.durationMs / 4))
          await hold(
            () => b.kill('SIGKILL'),
            () => b.restart(),
          )
        } finally {
          balancer.setBackends([a.url])
        }
        return
      case 'postgres-restart':
        return hold(
          () => stack.postgres.stop(detail.mode === 'fast' ? 'fast' : 'immediate'),
          stack.postgres.start,
        )
      case 'neon-drop': {
        const until = Date.now() + fault.durationMs
        while (Date.now() < until) {
          stack.database.dropConnections()
          await delay(Number(detail.everyMs))
        }
        return
      }
      case 'consumer-fail':
        return hold(
          () => balancer.failQueueConsumer(Number(detail.status)),
          () => balancer.failQueueConsumer(null),
        )
      case 'poison': {
        const rule = {
          marker: poisonTag(Number(detail.tag)),
          status: Number(detail.status),
          path: '/v1/events',
        }
        return hold(
          () => balancer.setPoison(rule),
          () => balancer.setPoison(null),
        )
      }
    }
  }

  /** After the schedule (or a failure half-way): every piece as the stack expects to find it. */
  async healAll(): Promise<void> {
    const { stack } = this
    stack.balancer.setPoison(null)
    stack.balancer.failQueueConsumer(null)
    await stack.heal()
  }
}
