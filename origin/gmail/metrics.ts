/**
 * The Gmail poller's counters, registered on the origin's registry so `GET /metrics` shows them.
 * Labels are small fixed sets (no mailbox, no message id).
 * @module
 */
import { Counter, Registry } from 'prom-client'

/** Not a customer message: SENT, DRAFT, SPAM or TRASH. */
export const SKIP_REASONS = ['label'] as const
export type SkipReason = (typeof SKIP_REASONS)[number]

/**
 * Why one message could not be taken (recorded in channel_failures and passed over; the
 * `reason` of inbound_gmail_messages_failed_total, the log line and the stored error), with what
 * each means: the operator's reading of a failure row.
 */
export const FAILURE_REASON_MEANINGS = {
  not_found: 'messages.get answered 404: deleted since it was listed, or not visible (yet)',
  client_error: 'another 4xx for this id (400, 410, ...): Gmail will not serve this message',
  no_raw: 'a 200 without a base64url `raw`',
  too_large: 'the answer, or the decoded email, is over the size bound',
  unparseable: 'postal-mime gave up, or the result is not a valid event',
  no_sender: 'no From address: there is no customer to file it under',
  rejected: 'the database refused its content (invalid_event)',
} as const
export type FailureReason = keyof typeof FAILURE_REASON_MEANINGS
const FAILURE_REASONS = Object.keys(FAILURE_REASON_MEANINGS) as FailureReason[]

export const POLL_RESULTS = ['completed', 'partial', 'busy', 'failed', 'disabled'] as const
export type PollStatus = (typeof POLL_RESULTS)[number]

/** Why a poll failed (the `reason` of inbound_gmail_poll_errors_total and of the log line). */
export const POLL_ERRORS = [
  /** 429 / 5xx / network until the retries ran out. */
  'gmail_unavailable',
  'gmail_unauthorized',
  /** Another 4xx, or an answer that is not the documented shape. */
  'gmail_error',
  /** The token endpoint refused the refresh token (invalid_grant: revoked or expired). */
  'oauth_failed',
  'oauth_unavailable',
  'database_unavailable',
  /** Another pod took the mailbox over (our lease ran out); nothing was stored. */
  'lease_lost',
  'stopped',
  'internal_error',
] as const
export type PollError = (typeof POLL_ERRORS)[number]

export interface GmailMetrics {
  /** messages.get answers with a message in them. */
  fetched: Counter<string>
  skipped: Counter<'reason'>
  /** Messages recorded as inbound failures and passed over, by {@link FailureReason}. */
  failed: Counter<'reason'>
  /** By the origin's outcome and by which layer decided it (redis: the claim said "done"). */
  ingested: Counter<'outcome' | 'decided_by'>
  polls: Counter<'result'>
  /** Failed polls by error code; the poller carries on at the next interval. */
  pollErrors: Counter<'reason'>
  fullSyncs: Counter<'reason'>
  httpRetries: Counter<'reason'>
}

export function createGmailMetrics(registry: Registry = new Registry()): GmailMetrics {
  const counter = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
    new Counter<L>({ name, help, labelNames, registers: [registry] })
  const metrics: GmailMetrics = {
    fetched: counter('inbound_gmail_messages_fetched_total', 'Gmail messages fetched (format=raw)'),
    skipped: counter(
      'inbound_gmail_messages_skipped_total',
      'Gmail messages not ingested on purpose: SENT/DRAFT/SPAM/TRASH label',
      ['reason'],
    ),
    failed: counter(
      'inbound_gmail_messages_failed_total',
      'Gmail messages that could not be fetched, parsed or stored: kept in channel_failures for replay',
      ['reason'],
    ),
    ingested: counter(
      'inbound_gmail_messages_ingested_total',
      'Gmail messages taken through dedup, by outcome and by the layer that decided',
      ['outcome', 'decided_by'],
    ),
    polls: counter('inbound_gmail_polls_total', 'Gmail polls by result', ['result']),
    pollErrors: counter(
      'inbound_gmail_poll_errors_total',
      'Gmail polls that failed, by error code (retried at the next interval)',
      ['reason'],
    ),
    fullSyncs: counter(
      'inbound_gmail_full_syncs_total',
      'Gmail full syncs: first run, or history too old (404)',
      ['reason'],
    ),
    httpRetries: counter(
      'inbound_gmail_http_retries_total',
      'Gmail and OAuth calls repeated after backoff, by cause',
      ['reason'],
    ),
  }
  // Zero-valued series from the start, so rate() and alerts work before the first event.
  metrics.fetched.inc(0)
  for (const reason of SKIP_REASONS) metrics.skipped.labels(reason).inc(0)
  for (const reason of FAILURE_REASONS) metrics.failed.labels(reason).inc(0)
  for (const result of POLL_RESULTS) metrics.polls.labels(result).inc(0)
  for (const reason of POLL_ERRORS) metrics.pollErrors.labels(reason).inc(0)
  return metrics
}

/** The sum of a counter's series that carry `labels` (for tests and the poll log). */
export async function counterValue(
  counter: Counter<string>,
  labels: Record<string, string> = {},
): Promise<number> {
  const { values } = await counter.get()
  return values
    .filter((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value))
    .reduce((sum, v) => sum + v.value, 0)
}
