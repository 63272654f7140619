/**
 * A gauge of `GET /metrics` read from Postgres at scrape time: one statement whose first row's
 * `n` is the value (negative read as 0). A database that does not answer leaves the last value,
 * and a warning naming the gauge.
 * @module
 */
import { Gauge, type Registry } from 'prom-client'
import type { Queryable } from './db'
import { describeError } from './errors'
import type { Logger } from './log'

export function sqlGauge(
  registry: Registry,
  db: Queryable,
  logger: Logger | undefined,
  gauge: { name: string; help: string; sql: string },
): Gauge {
  return new Gauge({
    name: gauge.name,
    help: gauge.help,
    registers: [registry],
    async collect() {
      try {
        const rows = await db.query<{ n: number }>(gauge.sql)
        this.set(Math.max(0, Number(rows[0]?.n ?? 0)))
      } catch (err) {
        logger?.warn(`metrics: ${gauge.name} not read`, describeError(err))
      }
    },
  })
}
