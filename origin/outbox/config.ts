/**
 * The outbox relay's settings, from the origin's environment. The relay is off unless
 * DOWNSTREAM_URL is set: then outbox rows simply stay unprocessed (`processed_at IS NULL`) for
 * another consumer to read, as before the relay existed.
 * @module
 */
import { ConfigError, intSetting, type OriginEnv } from '../config'
import { type RetryPolicy, readRetryPolicy } from '../failures/policy'

export interface DownstreamConfig {
  /** `DOWNSTREAM_URL`: every outbox row is POSTed here (JSON, `Idempotency-Key: outbox-{id}`). */
  url: string
  /** `DOWNSTREAM_TIMEOUT_MS`: bound on one hand-off, response included. @default 5000 */
  timeoutMs: number
}

export interface RelayConfig {
  downstream: DownstreamConfig
  /** `OUTBOX_POLL_INTERVAL_MS`: pause between relay passes when there was nothing to do. @default 1000 */
  pollIntervalMs: number
  /** `OUTBOX_BATCH_SIZE`: rows one pass claims (and hands off in parallel). @default 20 */
  batchSize: number
  retry: RetryPolicy
}

export const RELAY_DEFAULTS = {
  downstreamTimeoutMs: 5_000,
  pollIntervalMs: 1_000,
  batchSize: 20,
} as const

/** Null when DOWNSTREAM_URL is unset (relay off). @throws {ConfigError} listing every problem. */
export function loadRelayConfig(env: OriginEnv = process.env): RelayConfig | null {
  const problems: string[] = []
  const downstream = readDownstream(env, problems)
  const int = (name: string, fallback: number, min: number, max: number) =>
    intSetting(env, problems, name, fallback, min, max)
  const pollIntervalMs = int('OUTBOX_POLL_INTERVAL_MS', RELAY_DEFAULTS.pollIntervalMs, 10, 600_000)
  const batchSize = int('OUTBOX_BATCH_SIZE', RELAY_DEFAULTS.batchSize, 1, 1_000)
  const retry = readRetryPolicy(env, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  return downstream ? { downstream, pollIntervalMs, batchSize, retry } : null
}

/** DOWNSTREAM_URL and its timeout; null when the URL is unset. */
export function readDownstream(env: OriginEnv, problems: string[]): DownstreamConfig | null {
  const timeoutMs = intSetting(
    env,
    problems,
    'DOWNSTREAM_TIMEOUT_MS',
    RELAY_DEFAULTS.downstreamTimeoutMs,
    100,
    120_000,
  )
  const raw = env.DOWNSTREAM_URL?.trim()
  if (!raw) return null
  try {
    const url = new URL(raw)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)')
    // fetch refuses URLs with credentials; say so at start-up rather than on every hand-off.
    if (url.username || url.password) throw new Error('credentials in URL')
  } catch {
    problems.push('DOWNSTREAM_URL must be an http(s) URL without user:password@')
    return null
  }
  return { url: raw, timeoutMs }
}
