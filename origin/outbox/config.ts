/**
 * The outbox relay's settings, from the origin's environment. The relay is off unless
 * DOWNSTREAM_URL is set: then outbox rows simply stay unprocessed (`processed_at IS NULL`) for
 * another consumer to read.
 * @module
 */
import { httpUrl, present, readInt, setting } from '../../shared/settings'
import { ConfigError, type OriginEnv } from '../config'
import { RETRY_SETTINGS, type RetryPolicy, readRetryPolicy } from '../failures/policy'

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

export const DOWNSTREAM_URL = setting({
  name: 'DOWNSTREAM_URL',
  kind: 'url',
  secret: true,
  doc: 'where outbox rows are handed (http(s), no user:password@); unset: relay off',
})
export const DOWNSTREAM_TIMEOUT_MS = setting({
  name: 'DOWNSTREAM_TIMEOUT_MS',
  kind: 'int',
  secret: false,
  default: 5_000,
  min: 100,
  max: 120_000,
  doc: 'bound on one hand-off, response included',
})
export const OUTBOX_POLL_INTERVAL_MS = setting({
  name: 'OUTBOX_POLL_INTERVAL_MS',
  kind: 'int',
  secret: false,
  default: 1_000,
  min: 10,
  max: 600_000,
  doc: 'pause between relay passes that found nothing',
})
export const OUTBOX_BATCH_SIZE = setting({
  name: 'OUTBOX_BATCH_SIZE',
  kind: 'int',
  secret: false,
  default: 20,
  min: 1,
  max: 1_000,
  doc: 'rows one pass claims and hands off in parallel',
})
/** The relay's rows of the origin's table (origin/settings.ts), its retry policy's included. */
export const RELAY_SETTINGS = [
  DOWNSTREAM_URL,
  DOWNSTREAM_TIMEOUT_MS,
  OUTBOX_POLL_INTERVAL_MS,
  OUTBOX_BATCH_SIZE,
  ...RETRY_SETTINGS,
] as const

/** Null when DOWNSTREAM_URL is unset (relay off). @throws {ConfigError} listing every problem. */
export function loadRelayConfig(env: OriginEnv = process.env): RelayConfig | null {
  const problems: string[] = []
  const downstream = readDownstream(env, problems)
  const pollIntervalMs = readInt(env, OUTBOX_POLL_INTERVAL_MS, problems)
  const batchSize = readInt(env, OUTBOX_BATCH_SIZE, problems)
  const retry = readRetryPolicy(env, problems)
  if (problems.length > 0) throw new ConfigError(problems)
  return downstream ? { downstream, pollIntervalMs, batchSize, retry } : null
}

/** DOWNSTREAM_URL and its timeout; null when the URL is unset. */
export function readDownstream(env: OriginEnv, problems: string[]): DownstreamConfig | null {
  const timeoutMs = readInt(env, DOWNSTREAM_TIMEOUT_MS, problems)
  // Taken as written (a trailing slash may matter to the downstream), unlike readUrl.
  const raw = present(env, DOWNSTREAM_URL.name)
  if (!raw) return null
  const url = httpUrl(raw)
  // fetch refuses URLs with credentials; say so at start-up rather than on every hand-off.
  if (!url || url.username || url.password) {
    problems.push('DOWNSTREAM_URL must be an http(s) URL without user:password@')
    return null
  }
  return { url: raw, timeoutMs }
}
