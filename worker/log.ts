/**
 * Structured JSON log lines: one per delivery decision, plus problems. Never bodies, message text
 * or secrets: keys, codes, statuses and timings only.
 * @module
 */

/** What the gateway did with a delivery. */
export type Decision =
  /** The origin took it as a new message (or applied the edit / delete). */
  | 'forwarded'
  /** Already taken earlier: by Redis (`done`) or, after a forward, by Postgres. */
  | 'duplicate'
  /** Remembered, never forwarded (status callbacks, interactions). */
  | 'recorded'
  /** Verified, nothing to do (bot echo, other event types). */
  | 'ignored'
  /** Slack url_verification answered. */
  | 'challenge'
  /** The vendor was asked to retry (origin failed, or another attempt still in flight). */
  | 'retry'
  /** The origin failed; the event was kept in the spool for the cron drain, the vendor told ok. */
  | 'spooled'
  /** The origin refused the event as invalid: acknowledged so the vendor stops, logged loudly. */
  | 'rejected'

export interface DecisionLog {
  channel: string
  deliveryKey?: string
  decision: Decision
  /**
   * Which layer decided: Redis (claim state), Postgres (the origin), the gateway itself, or this
   * isolate's memo of keys it saw settled (SETTLED_MEMO_ENTRIES; Redis was not asked).
   */
  decidedBy: 'redis' | 'postgres' | 'gateway' | 'memo'
  status: number
  ms: number
  redis?: 'ok' | 'unavailable' | 'not_configured'
  /** The origin's outcome, status or failure, when it was called. */
  origin?: string
  reason?: string
  payloadMismatch?: boolean
  fallbackKey?: boolean
}

export function logDecision(entry: DecisionLog): void {
  const level =
    entry.decision === 'rejected'
      ? 'error'
      : entry.decision === 'retry' || entry.decision === 'spooled'
        ? 'warn'
        : 'info'
  console.log(JSON.stringify({ level, msg: 'decision', ...entry }))
}

export function logProblem(
  level: 'warn' | 'error',
  code: string,
  fields: Record<string, string | number | boolean | undefined> = {},
): void {
  logLine(level, code, fields)
}

/** One JSON log line (what logProblem writes, at any level). */
export function logLine(
  level: 'info' | 'warn' | 'error',
  msg: string,
  fields: Record<string, string | number | boolean | undefined> = {},
): void {
  console.log(JSON.stringify({ level, msg, ...fields }))
}

/** An error's name and message as one bounded line (contract/describe-error.ts). */
export { errorLine as describeError } from '../contract/describe-error'
