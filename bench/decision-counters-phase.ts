/**
 * The decision counters' hot-path cost in workerd, for `npm run bench` (phase
 * `decision-counters`): the verify-only Worker runs bench/decision-tally-loop.ts N times in one
 * request (`GET /bench/decision-counters?n=N`), and the same request with n=0 beside it. Inside
 * workerd the clock stands still while code runs, so the time is taken here, around the request:
 * (wall of n=N − wall of n=0) ÷ N, per round, the median of the rounds reported with their lowest
 * and highest as its noise. A second or two in all.
 * @module
 */
import { round, say } from './util'

/** Decisions per measured request: tens of ms of CPU, well above a request's own jitter. */
const CALLS = 200_000
const ROUNDS = 9
const REQUEST_TIMEOUT_MS = 15_000

export interface DecisionCountersCost {
  runtime: string
  callsPerRound: number
  rounds: number
  /** Median over the rounds, ns per decision. */
  nsPerDecision: number
  /** The lowest and highest round: how noisy the median is. */
  minNs: number
  maxNs: number
}

export async function measureDecisionCounters(
  verifyOnlyUrl: string,
): Promise<DecisionCountersCost> {
  const timed = async (n: number): Promise<number> => {
    const started = performance.now()
    const response = await fetch(`${verifyOnlyUrl}/bench/decision-counters?n=${n}`, {
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    const answer = (await response.json()) as { n?: number }
    if (!response.ok || answer.n !== n) {
      throw new Error(`decision counters: the verify-only Worker answered ${response.status}`)
    }
    return performance.now() - started
  }
  await timed(CALLS) // warm-up: JIT, the isolate's first run
  const perRound: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    // Which goes first alternates, so a drift in the machine's load favours neither.
    let empty: number
    let full: number
    if (i % 2 === 0) {
      empty = await timed(0)
      full = await timed(CALLS)
    } else {
      full = await timed(CALLS)
      empty = await timed(0)
    }
    perRound.push(((full - empty) * 1e6) / CALLS)
  }
  perRound.sort((a, b) => a - b)
  const cost = {
    runtime: 'workerd (Miniflare), verify-only Worker',
    callsPerRound: CALLS,
    rounds: ROUNDS,
    nsPerDecision: round(perRound[Math.floor(ROUNDS / 2)] ?? 0, 0),
    minNs: round(perRound[0] ?? 0, 0),
    maxNs: round(perRound[ROUNDS - 1] ?? 0, 0),
  }
  say(`decision counters in workerd: ${describeCost(cost)}`)
  return cost
}

/** "310 ns (0.31 µs) per decision, rounds 280–420 ns, median of 9 × 200,000" */
export function describeCost(cost: DecisionCountersCost): string {
  return (
    `${cost.nsPerDecision} ns (${round(cost.nsPerDecision / 1000, 2)} µs) per decision, ` +
    `rounds ${cost.minNs}–${cost.maxNs} ns, median of ${cost.rounds} × ` +
    `${cost.callsPerRound.toLocaleString('en-US')} in ${cost.runtime}`
  )
}
