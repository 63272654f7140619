/**
 * One replay of a failed hand-off, the same for the retry worker and for `npm run failures --
 * replay`: the same outbox row, the same `Idempotency-Key`, the same statements. A replay can
 * therefore never produce a second outbox row or a second downstream item under another key.
 * @module
 */
import type { Queryable } from '../db'
import type { DownstreamConfig } from '../outbox/config'
import { handOff } from '../outbox/downstream'
import { backoffMs, isExhausted, type RetryPolicy } from './policy'
import { type ClaimedFailure, recordFailedAttempt, resolveFailure } from './store'

export type ReplayOutcome =
  /** Handed off now; the outbox row is processed, the failure resolved. */
  | { outcome: 'resolved' }
  /** The outbox row had been processed meanwhile; resolved without a hand-off. */
  | { outcome: 'already_processed' }
  /** Failed again; due again at the next backoff. */
  | { outcome: 'retry_scheduled'; error: string; retryInMs: number; attempts: number }
  /** Failed again and out of attempts. */
  | { outcome: 'dead'; error: string; attempts: number }
  /** Our claim was overtaken (lease ran out); the newer holder's outcome stands. */
  | { outcome: 'claim_lost'; handedOff: boolean }

export interface ReplayDeps {
  db: Queryable
  downstream: DownstreamConfig
  retry: RetryPolicy
  /** In [0, 1), for the backoff's jitter. @default Math.random */
  random?: () => number
}

export async function replayClaimed(
  deps: ReplayDeps,
  claimed: ClaimedFailure,
): Promise<ReplayOutcome> {
  if (claimed.processed) {
    return (await resolveFailure(deps.db, claimed, false))
      ? { outcome: 'already_processed' }
      : { outcome: 'claim_lost', handedOff: false }
  }
  const result = await handOff(deps.downstream, claimed.row)
  if (result.ok) {
    return (await resolveFailure(deps.db, claimed, true))
      ? { outcome: 'resolved' }
      : { outcome: 'claim_lost', handedOff: true }
  }
  const attempts = claimed.attempts + 1
  const dead = isExhausted(deps.retry, attempts)
  const retryInMs = dead ? 0 : backoffMs(deps.retry, attempts, (deps.random ?? Math.random)())
  const written = await recordFailedAttempt(
    deps.db,
    claimed,
    result.error,
    dead ? 'dead' : 'pending',
    retryInMs,
  )
  if (!written) return { outcome: 'claim_lost', handedOff: false }
  return dead
    ? { outcome: 'dead', error: result.error, attempts }
    : { outcome: 'retry_scheduled', error: result.error, retryInMs, attempts }
}
