/**
 * How a failed downstream hand-off is retried: exponential backoff with jitter and a cap, then
 * dead. Read from the origin's environment by the relay and by `npm run failures` alike.
 * @module
 */
import type { Backoff } from '../../shared/backoff'
import { readInt, setting } from '../../shared/settings'
import type { OriginEnv } from '../config'

export { backoffMs } from '../../shared/backoff'

export interface RetryPolicy extends Backoff {
  /**
   * `FAILURE_MAX_ATTEMPTS`: hand-off attempts per outbox row, the first one included; after this
   * many failures the row is marked dead. @default 8
   */
  maxAttempts: number
  /** `FAILURE_BACKOFF_BASE_MS`: the wait after the first failure (then doubling). @default 5000 */
  baseMs: number
  /** `FAILURE_BACKOFF_MAX_MS`: no wait is longer than this. @default 900000 (15 min) */
  maxMs: number
}

export const FAILURE_MAX_ATTEMPTS = setting({
  name: 'FAILURE_MAX_ATTEMPTS',
  kind: 'int',
  secret: false,
  default: 8,
  min: 1,
  max: 1_000,
  doc: 'hand-off attempts per outbox row, then dead',
})
export const FAILURE_BACKOFF_BASE_MS = setting({
  name: 'FAILURE_BACKOFF_BASE_MS',
  kind: 'int',
  secret: false,
  default: 5_000,
  min: 1,
  max: 86_400_000,
  doc: 'the wait after the first failed hand-off, doubling from there',
})
export const FAILURE_BACKOFF_MAX_MS = setting({
  name: 'FAILURE_BACKOFF_MAX_MS',
  kind: 'int',
  secret: false,
  default: 900_000,
  min: 1,
  max: 7 * 86_400_000,
  doc: 'no wait between hand-offs is longer',
})
export const RETRY_SETTINGS = [
  FAILURE_MAX_ATTEMPTS,
  FAILURE_BACKOFF_BASE_MS,
  FAILURE_BACKOFF_MAX_MS,
] as const

export function readRetryPolicy(env: OriginEnv, problems: string[]): RetryPolicy {
  const policy = {
    maxAttempts: readInt(env, FAILURE_MAX_ATTEMPTS, problems),
    baseMs: readInt(env, FAILURE_BACKOFF_BASE_MS, problems),
    maxMs: readInt(env, FAILURE_BACKOFF_MAX_MS, problems),
  }
  if (policy.maxMs < policy.baseMs) {
    problems.push('FAILURE_BACKOFF_MAX_MS must not be below FAILURE_BACKOFF_BASE_MS')
  }
  return policy
}

/** Whether a row with this many failed attempts is out of retries. */
export function isExhausted(policy: RetryPolicy, failures: number): boolean {
  return failures >= policy.maxAttempts
}
