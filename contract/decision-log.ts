/**
 * The decision log line, one shape for every place that decides what a delivery is: the Worker's
 * gateway (webhooks, email), the origin's ingest (`POST /v1/events`) and the Gmail poller. Each
 * writes `{level, msg: "decision", component, channel, decision, decidedBy, ...}`, so one query
 * (or bench/logs.ts, the soak, a dashboard) reads them all. Keys, codes, statuses and timings
 * only: never bodies, message text or secrets.
 * @module
 */
import type { IngestOutcome } from './event'

/** What the Worker's gateway did with a delivery. */
export type GatewayDecision =
  /** The origin took it as a new message (or applied the edit / delete). */
  | 'forwarded'
  /** Already taken earlier: by Redis (`done`) or, after a forward, by Postgres. */
  | 'duplicate'
  /** Remembered, never forwarded (status callbacks, interactions). */
  | 'recorded'
  /** Verified, nothing to do (bot echo, other event types). */
  | 'ignored'
  /** A handshake answered (Slack's url_verification, Meta's GET hub.challenge). */
  | 'challenge'
  /** The vendor was asked to retry (origin failed, or another attempt still in flight). */
  | 'retry'
  /** The origin failed; the event went on the spool queue (Cloudflare Queues), the vendor told ok. */
  | 'spooled'
  /** The origin refused the event as invalid: acknowledged so the vendor stops, logged loudly. */
  | 'rejected'
  /**
   * Verified, but the channel's code could not place it: kept whole as a dead letter
   * (`unrecognized_event`), replayed once the code knows it. Acknowledged, logged at warn.
   */
  | 'unrecognized'

/** The gateway's decisions, and the origin's outcomes (created, duplicate, updated, ignored). */
export type Decision = GatewayDecision | IngestOutcome

export const DECISION_MSG = 'decision'

/**
 * The Worker's webhook replies carry each item's gateway decision, comma-separated in batch order
 * (`forwarded`, `duplicate`, ...): after verification only, so only the vendor learns it, and it
 * decides nothing. `local/send-webhook.ts` reads it to say "new" or "duplicate".
 */
export const DECISION_HEADER = 'x-dedup-decision'

export interface DecisionLog {
  /** Which part decided: the Worker, the origin's ingest, the origin's Gmail poller. */
  component: 'worker' | 'origin' | 'gmail'
  channel: string
  deliveryKey?: string
  messageKey?: string
  decision: Decision
  /**
   * Which layer decided: Redis (claim state), Postgres (the origin), the gateway itself, or the
   * isolate's memo of keys it saw settled (SETTLED_MEMO_ENTRIES; Redis was not asked).
   */
  decidedBy: 'redis' | 'postgres' | 'gateway' | 'memo'
  /** The answer the sender got: the HTTP status, or for email the SMTP code. */
  status?: number
  ms?: number
  redis?: 'ok' | 'unavailable' | 'not_configured' | 'inflight'
  /** The origin's outcome, status or failure, when the Worker called it. */
  origin?: string
  /** The stored message (the origin and the poller know it). */
  messageId?: string | null
  /** message, edit or delete (the origin's events). */
  kind?: string
  /** The Gmail message id (the poller). */
  gmailId?: string
  reason?: string
  payloadMismatch?: boolean
  /** A payload mismatch's two hashes: the one kept for the key, and this delivery's. */
  storedHash?: string
  offeredHash?: string
  fallbackKey?: boolean
  /** The connection (contract/connection.ts) whose secrets verified the request, and its version. */
  connection?: string
  connectionVersion?: number
}

/** Refusals are errors; retries, the spool and payload mismatches are worth a look. */
export function decisionLevel(entry: DecisionLog): 'info' | 'warn' | 'error' {
  if (entry.decision === 'rejected') return 'error'
  if (
    entry.decision === 'retry' ||
    entry.decision === 'spooled' ||
    entry.decision === 'unrecognized' ||
    entry.payloadMismatch
  ) {
    return 'warn'
  }
  return 'info'
}
