/**
 * Prometheus metrics for `GET /metrics`. Each app gets its own prom-client Registry (not the global
 * one), so a process (a test file) can run several apps without "metric already registered".
 * @module
 */
import { Counter, collectDefaultMetrics, Histogram, Registry } from 'prom-client'
import type { TallyRow } from '../contract/decision-counts'
import type { Channel, IngestOutcome } from '../contract/event'

const OUTCOMES: readonly IngestOutcome[] = ['created', 'duplicate', 'updated', 'ignored']

export interface OriginMetrics {
  registry: Registry
  /** Accepted events by decision. */
  events: Counter<'channel' | 'outcome'>
  /** Duplicates caught by Postgres (every duplicate at the origin is; the label makes it explicit). */
  dbDuplicates: Counter<'channel'>
  /** Same message key, different payload hash: the first was kept. */
  payloadMismatches: Counter<'channel'>
  /** Time to decide an accepted event, database work included. */
  ingestSeconds: Histogram<'channel'>
  /** Requests answered with an error, by error code (unauthorized, invalid_event, ...). */
  rejected: Counter<'code'>
  /** Inbound events recorded dead (the spool queue's dead-letter consumer gave them up). */
  inboundDead: Counter<'channel'>
  /** The Worker's decisions as its isolates flush them here ({@link countGatewayDecisions}). */
  gatewayDecisions: Counter<'channel' | 'decision' | 'decided_by' | 'reason'>
  /** The channels whose series exist ({@link seriesOf}). */
  seen: Set<Channel>
  /** The label sets of {@link OriginMetrics.gatewayDecisions} so far (bounded). */
  decisionSeries: Set<string>
}

/**
 * A channel's series at zero, all of them, the first time it is counted: rate() and alerts see
 * its later changes (a first payload mismatch, a first duplicate). Channels are data (any name of
 * contract/event.ts's CHANNEL_NAME form), so the origin learns them from their events; a
 * channel's series appear with its first event (or dead letter) since this process started.
 */
export function seriesOf(metrics: OriginMetrics, channel: Channel): OriginMetrics {
  if (!metrics.seen.has(channel)) {
    metrics.seen.add(channel)
    for (const outcome of OUTCOMES) metrics.events.labels(channel, outcome).inc(0)
    metrics.dbDuplicates.labels(channel).inc(0)
    metrics.payloadMismatches.labels(channel).inc(0)
    metrics.inboundDead.labels(channel).inc(0)
  }
  return metrics
}

/** Label sets of inbound_gateway_decisions_total at most; past it, new ones count as `other`. */
export const MAX_DECISION_SERIES = 1_000
const OTHER = { channel: 'other', decision: 'other', decided_by: 'other', reason: 'other' }

/**
 * The rows of a decision batch the origin recorded (once: a batch resent is not counted again),
 * added to inbound_gateway_decisions_total: the Redis-layer duplicates, refusals, spooled events,
 * spool retries and failed claims that the Worker decided and the origin never saw otherwise.
 * Counted as they arrive, so a rate is late by the flush interval (DECISION_FLUSH_SECONDS), and
 * what the Worker counts while it cannot reach the origin arrives when it can.
 */
export function countGatewayDecisions(metrics: OriginMetrics, rows: readonly TallyRow[]): void {
  for (const row of rows) {
    const labels = {
      channel: row.channel,
      decision: row.decision,
      decided_by: row.decidedBy,
      reason: row.reason,
    }
    const key = `${row.channel}|${row.decision}|${row.decidedBy}|${row.reason}`
    if (!metrics.decisionSeries.has(key) && metrics.decisionSeries.size < MAX_DECISION_SERIES) {
      metrics.decisionSeries.add(key)
    }
    metrics.gatewayDecisions.labels(metrics.decisionSeries.has(key) ? labels : OTHER).inc(row.count)
  }
}

export function createMetrics(): OriginMetrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const metrics: OriginMetrics = {
    registry,
    events: new Counter({
      name: 'inbound_events_total',
      help: 'Inbound events accepted by the origin, by channel and outcome',
      labelNames: ['channel', 'outcome'],
      registers: [registry],
    }),
    dbDuplicates: new Counter({
      name: 'inbound_db_duplicates_total',
      help: 'Duplicate deliveries caught by the Postgres unique indexes',
      labelNames: ['channel'],
      registers: [registry],
    }),
    payloadMismatches: new Counter({
      name: 'inbound_payload_mismatch_total',
      help: 'Deliveries whose message key was known with another payload hash (first kept)',
      labelNames: ['channel'],
      registers: [registry],
    }),
    ingestSeconds: new Histogram({
      name: 'inbound_ingest_seconds',
      help: 'Time to ingest one accepted event, in seconds',
      labelNames: ['channel'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    rejected: new Counter({
      name: 'inbound_rejected_total',
      help: 'Requests to the origin answered with an error, by error code',
      labelNames: ['code'],
      registers: [registry],
    }),
    inboundDead: new Counter({
      name: 'inbound_dead_events_total',
      help: 'Inbound events the spool queue gave up on, recorded in channel_failures for replay',
      labelNames: ['channel'],
      registers: [registry],
    }),
    gatewayDecisions: new Counter({
      name: 'inbound_gateway_decisions_total',
      help: 'Decisions of the Worker (gateway), as its isolates flush them to the origin: by channel, decision, deciding layer and reason',
      labelNames: ['channel', 'decision', 'decided_by', 'reason'],
      registers: [registry],
    }),
    seen: new Set(),
    decisionSeries: new Set(),
  }
  return metrics
}
