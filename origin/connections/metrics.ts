/**
 * The registry's gauges on the origin's `GET /metrics`, read at scrape time: changes not yet
 * written to Workers KV and how long the oldest has waited (a publisher that is off, failing, or
 * a connection it cannot build shows here before an operator notices a tenant unchanged at the
 * edge). A database that does not answer leaves the last values, and a warning.
 * @module
 */
import type { Registry } from 'prom-client'
import type { Queryable } from '../db'
import type { Logger } from '../log'
import { sqlGauge } from '../sql-gauge'

export function registerRegistryGauges(registry: Registry, db: Queryable, logger: Logger): void {
  const gauge = (name: string, help: string, sql: string) =>
    sqlGauge(registry, db, logger, { name, help, sql })
  gauge(
    'inbound_connection_publications_pending',
    'Connection changes not yet written to Workers KV',
    'SELECT count(*)::int AS n FROM connection_publications WHERE published_at IS NULL',
  )
  // The oldest by id, through the partial index of pending rows: one row read.
  gauge(
    'inbound_connection_publications_oldest_pending_seconds',
    'Age of the oldest connection change not yet written to Workers KV (0 when none waits)',
    `SELECT extract(epoch FROM now() - created_at)::float8 AS n FROM connection_publications
      WHERE published_at IS NULL ORDER BY id LIMIT 1`,
  )
}
