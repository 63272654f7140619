/**
 * The spool queue's backlog on `GET /metrics`, from what the origin can read (a Worker cannot read
 * its queue's backlog, and the origin cannot either). The Worker counts, in the Redis stats hash
 * (`{prefix}dedup:stats`), each event it puts on the spool queue (`spool_queued:{channel}`), lands
 * from it (`spool_delivered:{channel}`) and moves from it to the dead letters
 * (`spool_dead:{channel}`): what was queued and neither landed nor died is still waiting. The
 * oldest waiting event's age is estimated from the front doors' `spooled` decisions, per minute,
 * in `gateway_decisions`: the minute that many events back, counting from the newest, as if the
 * queue were first in, first out (a lone event retried behind newer ones is older than that).
 * Read at scrape time, at most once a second, each read bounded (the claim store's Redis timeout,
 * the statement timeout, a row limit). Both are estimates: an increment lost while Redis failed
 * leaves the backlog off by one until the stats hash is reset; the exact figures are the queue's
 * own metrics in Cloudflare's dashboard.
 * @module
 */
import { Gauge, type Registry } from 'prom-client'
import type { ClaimStore } from '../claims'
import type { Queryable } from './db'
import { describeError } from './errors'
import type { Logger } from './log'

/** How far back the age looks: the longest retention a Cloudflare queue has. */
const LOOKBACK_DAYS = 14
/** Minute rows read at most for the age (14 days × a few channels fit). */
const MAX_MINUTE_ROWS = 50_000
/** Scrapes within this share one reading (both gauges of one scrape, a scraper retrying). */
const READING_MS = 1_000

export interface SpoolReading {
  /** Events queued and not yet landed or dead, per channel. */
  backlog: Map<string, number>
  /** The estimated age of the oldest of them, per channel (0 when none waits). */
  oldestAgeSeconds: Map<string, number>
}

/** Per channel: queued − delivered − dead, never below 0 (a lost increment must not go negative). */
export function backlogOf(stats: Record<string, number>): Map<string, number> {
  const sum = new Map<string, number>()
  const add = (channel: string, n: number) => sum.set(channel, (sum.get(channel) ?? 0) + n)
  for (const [field, value] of Object.entries(stats)) {
    const [name, channel] = field.split(':', 2)
    if (!channel || !Number.isFinite(value)) continue
    if (name === 'spool_queued') add(channel, value)
    else if (name === 'spool_delivered' || name === 'spool_dead') add(channel, -value)
  }
  for (const [channel, n] of sum) sum.set(channel, Math.max(0, n))
  return sum
}

/**
 * The minute (unix seconds) of the oldest of the newest `backlog` spooled events, given the
 * spooled counts per minute, newest first; null when none were counted.
 */
export function oldestQueuedMinute(
  minutes: readonly { at: number; n: number }[],
  backlog: number,
): number | null {
  let newer = 0
  for (const minute of minutes) {
    newer += minute.n
    if (newer >= backlog) return minute.at
  }
  return minutes.at(-1)?.at ?? null
}

export async function readSpool(
  db: Queryable,
  claims: ClaimStore,
  nowMs = Date.now(),
): Promise<SpoolReading> {
  const backlog = backlogOf(await claims.stats())
  const oldestAgeSeconds = new Map([...backlog.keys()].map((channel) => [channel, 0]))
  const waiting = [...backlog].filter(([, n]) => n > 0).map(([channel]) => channel)
  if (waiting.length === 0) return { backlog, oldestAgeSeconds }
  const rows = await db.query<{ channel: string; at: string; n: string }>(
    `SELECT channel, extract(epoch FROM bucket)::bigint::text AS at, sum(count)::text AS n
       FROM gateway_decisions
      WHERE decision = 'spooled' AND channel = ANY($1::text[])
        AND bucket >= now() - make_interval(days => $2)
      GROUP BY channel, bucket ORDER BY channel, bucket DESC LIMIT $3`,
    [waiting, LOOKBACK_DAYS, MAX_MINUTE_ROWS],
  )
  for (const channel of waiting) {
    const minutes = rows
      .filter((r) => r.channel === channel)
      .map((r) => ({ at: Number(r.at), n: Number(r.n) }))
    const at = oldestQueuedMinute(minutes, backlog.get(channel) ?? 0)
    if (at !== null) oldestAgeSeconds.set(channel, Math.max(0, Math.round(nowMs / 1000 - at)))
  }
  return { backlog, oldestAgeSeconds }
}

/**
 * Registers `inbound_spool_backlog` and `inbound_spool_oldest_age_seconds` (once per registry).
 * Without a claim store (no UPSTASH_* on the origin) they have no series. A reading that fails
 * leaves the last values, with a warning.
 */
export function registerSpoolGauges(
  registry: Registry,
  db: Queryable,
  claims: ClaimStore | null,
  logger?: Logger,
): void {
  if (registry.getSingleMetric('inbound_spool_backlog')) return
  let last: { at: number; reading: Promise<SpoolReading | null> } | null = null
  const reading = () => {
    if (!claims) return Promise.resolve(null)
    if (!last || Date.now() - last.at > READING_MS) {
      const read = readSpool(db, claims).catch((err: unknown) => {
        logger?.warn('metrics: spool backlog not read', describeError(err))
        return null
      })
      last = { at: Date.now(), reading: read }
    }
    return last.reading
  }
  const gauge = (name: string, help: string, pick: (r: SpoolReading) => Map<string, number>) =>
    new Gauge({
      name,
      help,
      labelNames: ['channel'],
      registers: [registry],
      async collect() {
        const read = await reading()
        if (!read) return
        this.reset()
        for (const [channel, value] of pick(read)) this.labels(channel).set(value)
      },
    })
  gauge(
    'inbound_spool_backlog',
    'Events on the spool queue, not yet landed or dead-lettered (the Worker counts in Redis: queued - delivered - dead), by channel',
    (r) => r.backlog,
  )
  gauge(
    'inbound_spool_oldest_age_seconds',
    'Estimated age of the oldest event on the spool queue (from the spooled decisions per minute, first in first out), by channel',
    (r) => r.oldestAgeSeconds,
  )
}
