/**
 * One retry schedule for every retry loop of the system: the origin's downstream hand-offs
 * (origin/failures/policy.ts), the Gmail poller's API calls (origin/gmail/http.ts) and the Worker's
 * spool queue consumers (worker/spool/retries.ts, worker/spool/dead-letter-consumer.ts).
 * @module
 */

export interface Backoff {
  /** The wait after the first failure (then doubling). */
  baseMs: number
  /** No wait is longer than this. */
  maxMs: number
}

/**
 * The wait before the next attempt after `failures` failed ones: base × 2^(failures − 1), capped,
 * then "equal jitter" (half fixed, half random) so callers that failed together do not retry in
 * lockstep, and no wait collapses to zero. `random` in [0, 1).
 */
export function backoffMs(policy: Backoff, failures: number, random = Math.random()): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 52)
  const ceiling = Math.min(policy.maxMs, policy.baseMs * 2 ** exponent)
  return Math.round(ceiling / 2 + random * (ceiling / 2))
}
