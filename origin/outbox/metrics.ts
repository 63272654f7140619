/**
 * The relay's metrics, registered on the origin's registry so `GET /metrics` shows them:
 * hand-offs by path and result, rows marked dead, and (read from Postgres on each scrape) the
 * outbox backlog, its oldest row's age, and the failure rows by status.
 * @module
 */
import { Counter, Gauge, Registry } from 'prom-client'
import type { Queryable } from '../db'
import { describeError } from '../errors'
import { countFailuresByStatus, FAILURE_STATUSES } from '../failures/store'
import type { Logger } from '../log'
import { sqlGauge } from '../sql-gauge'

/** new: a row's first hand-off; retry: the retry worker. (Manual replays are the CLI's.) */
export const RELAY_PATHS = ['new', 'retry'] as const

export interface RelayMetrics {
  relayed: Counter<'path'>
  failed: Counter<'path'>
  dead: Counter<string>
}

export function createRelayMetrics(
  registry: Registry = new Registry(),
  db?: Queryable,
  logger?: Logger,
): RelayMetrics {
  const metrics: RelayMetrics = {
    relayed: new Counter({
      name: 'inbound_outbox_relayed_total',
      help: 'Outbox rows handed downstream (2xx), by path: new row or retry of a failure',
      labelNames: ['path'],
      registers: [registry],
    }),
    failed: new Counter({
      name: 'inbound_outbox_relay_failed_total',
      help: 'Downstream hand-offs that failed (status, timeout, network), by path',
      labelNames: ['path'],
      registers: [registry],
    }),
    dead: new Counter({
      name: 'inbound_outbox_dead_total',
      help: 'Failure rows marked dead after FAILURE_MAX_ATTEMPTS failed hand-offs',
      registers: [registry],
    }),
  }
  for (const path of RELAY_PATHS) {
    metrics.relayed.labels(path).inc(0)
    metrics.failed.labels(path).inc(0)
  }
  metrics.dead.inc(0)
  if (db) registerBacklogGauges(registry, db, logger)
  return metrics
}

/** Read at scrape time; a database that does not answer leaves the last values (and a warning). */
function registerBacklogGauges(registry: Registry, db: Queryable, logger?: Logger): void {
  new Gauge({
    name: 'inbound_channel_failures',
    help: 'channel_failures rows by status (pending: retrying; dead: needs an operator)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      try {
        const counts = await countFailuresByStatus(db)
        for (const status of FAILURE_STATUSES) this.labels(status).set(counts[status])
      } catch (err) {
        logger?.warn('metrics: channel_failures count failed', describeError(err))
      }
    },
  })
  const outboxGauge = (name: string, help: string, sql: string) =>
    sqlGauge(registry, db, logger, { name, help, sql })
  outboxGauge(
    'inbound_outbox_unprocessed',
    'Outbox rows not yet handed downstream (processed_at IS NULL)',
    'SELECT count(*)::int AS n FROM outbox WHERE processed_at IS NULL',
  )
  // The oldest by id, through the partial index of unprocessed rows: one row read.
  outboxGauge(
    'inbound_outbox_oldest_unprocessed_seconds',
    'Age of the oldest outbox row not yet handed downstream (0 when none waits)',
    `SELECT extract(epoch FROM now() - created_at)::float8 AS n FROM outbox
      WHERE processed_at IS NULL ORDER BY id LIMIT 1`,
  )
}
