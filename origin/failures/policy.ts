/**
 * How a failed downstream hand-off is retried: exponential backoff with jitter and a cap, then
 * dead. Read from the origin's environment by the relay and by `npm run failures` alike.
 * @module
 */
import type { Backoff } from '../../contract/backoff'
import { ConfigError, intSetting, type OriginEnv } from '../config'

export { backoffMs } from '../../contract/backoff'

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

export const RETRY_DEFAULTS: RetryPolicy = { maxAttempts: 8, baseMs: 5_000, maxMs: 900_000 }

/** @throws {ConfigError} listing every problem. */
export function loadRetryPolicy(env: OriginEnv = process.env): RetryPolicy {
  const problems: string[] = []
  const policy = readRetryPolicy(env, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  return policy
}

export function readRetryPolicy(env: OriginEnv, problems: string[]): RetryPolicy {
  const int = (name: string, fallback: number, min: number, max: number) =>
    intSetting(env, problems, name, fallback, min, max)
  const policy = {
    maxAttempts: int('FAILURE_MAX_ATTEMPTS', RETRY_DEFAULTS.maxAttempts, 1, 1_000),
    baseMs: int('FAILURE_BACKOFF_BASE_MS', RETRY_DEFAULTS.baseMs, 1, 86_400_000),
    maxMs: int('FAILURE_BACKOFF_MAX_MS', RETRY_DEFAULTS.maxMs, 1, 7 * 86_400_000),
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
