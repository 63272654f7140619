/**
 * Where a memo miss's extra CPU goes, apart from the KV get: each step the Worker runs on a record
 * it has not read before (bench/connection-steps-loop.ts), N times in one request to the
 * verify-only Worker in workerd, timed from here against the same request with n = 0 (inside
 * workerd the clock stands still while code runs): (wall of n = N − wall of n = 0) ÷ N, the
 * median of the rounds. The KV get is then what is left of the miss's extra workerd CPU.
 * @module
 */
import { CONNECTION_STEPS, type ConnectionStep } from './connection-steps-loop'
import { round } from './util'

const CALLS = 1_000
const ROUNDS = 5
const REQUEST_TIMEOUT_MS = 30_000

/** µs per record of each step, in workerd. */
export type MissBreakdown = Record<ConnectionStep, number> & {
  callsPerRound: number
  rounds: number
}

export async function missBreakdown(workerUrl: string, recordText: string): Promise<MissBreakdown> {
  const timed = async (step: ConnectionStep, n: number): Promise<number> => {
    const started = performance.now()
    const response = await fetch(`${workerUrl}/bench/connection-steps?step=${step}&n=${n}`, {
      method: 'POST',
      body: recordText,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    const answer = (await response.json()) as { n?: number }
    if (!response.ok || answer.n !== n) {
      throw new Error(`connection steps: the verify-only Worker answered ${response.status}`)
    }
    return performance.now() - started
  }
  const out = { callsPerRound: CALLS, rounds: ROUNDS } as MissBreakdown
  for (const step of CONNECTION_STEPS) {
    await timed(step, CALLS) // warm-up: the JIT
    const perRound: number[] = []
    for (let i = 0; i < ROUNDS; i++) {
      // Which goes first alternates, so a drift in the machine's load favours neither.
      let empty: number
      let full: number
      if (i % 2 === 0) {
        empty = await timed(step, 0)
        full = await timed(step, CALLS)
      } else {
        full = await timed(step, CALLS)
        empty = await timed(step, 0)
      }
      perRound.push(((full - empty) * 1000) / CALLS)
    }
    perRound.sort((a, b) => a - b)
    out[step] = round(perRound[Math.floor(ROUNDS / 2)] ?? 0, 1)
  }
  return out
}
