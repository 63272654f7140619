/**
 * The overview's numbers: per channel, over a time range, the deliveries by decision and by the
 * layer that decided (from the gateway's flushed counts), the dead letters (channel_failures),
 * the duplicate rate, the gateway's decision time p50 / p99 (from the fixed-bucket histogram) and
 * a series over time for the chart.
 * @module
 */
import { MS_BUCKETS, SPOOL_RETRIED } from '../../contract/decision-counts'
import type { Queryable } from '../db'

export interface Range {
  since: Date
  until: Date
}

/** The overview's columns, in order: what a delivery became, and who decided. */
export const CATEGORIES = [
  'forwarded',
  'duplicate_redis',
  'duplicate_postgres',
  'payload_mismatch',
  'spooled',
  'dead_lettered',
  'rejected',
  'unrecognized',
  'ignored',
  'retry',
] as const
export type Category = (typeof CATEGORIES)[number]

export interface ChannelOverview {
  channel: string
  counts: Record<Category, number>
  /** Rejections by reason (bad_signature, foreign_tenant, bad_body, ...). */
  rejected: Record<string, number>
  /**
   * New deliveries by the layer that decided them: `redis` (the first claim), `postgres` (Redis
   * out of reach or slow: the insert decided), as the lookup's decisions say.
   */
  forwardedBy: Record<string, number>
  /** Duplicates over everything that carried a message (new + duplicate), 0..1; null: none. */
  duplicateRate: number | null
  /** Upper bounds of the decision time's p50 / p99 bucket (ms); null past the last bound. */
  p50: number | null | undefined
  p99: number | null | undefined
  series: SeriesPoint[]
}

export interface SeriesPoint {
  at: Date
  forwarded: number
  duplicate: number
  rejected: number
}

interface CountRow {
  channel: string
  decision: string
  decided_by: string
  reason: string
  n: string
  h: string[]
}

/** Which overview column one gateway count row belongs to. */
export function categoryOf(decision: string, decidedBy: string, reason: string): Category | null {
  if (reason === 'payload_mismatch') return 'payload_mismatch'
  switch (decision) {
    case 'forwarded':
      return 'forwarded'
    case 'duplicate':
      return decidedBy === 'postgres' ? 'duplicate_postgres' : 'duplicate_redis'
    case 'spooled':
    case 'rejected':
    case 'unrecognized':
    case 'retry':
      return decision
    case 'ignored':
    case 'recorded':
      return 'ignored'
    default:
      return null
  }
}

const emptyCounts = (): Record<Category, number> =>
  Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>

/** The bound of the bucket holding quantile `q` of a histogram: undefined when it is empty. */
export function quantileBound(histogram: readonly number[], q: number): number | null | undefined {
  const total = histogram.reduce((a, b) => a + b, 0)
  if (total === 0) return undefined
  let seen = 0
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i] ?? 0
    if (seen >= q * total) return MS_BUCKETS[i] ?? null
  }
  return null
}

export async function overview(db: Queryable, range: Range): Promise<ChannelOverview[]> {
  const [counts, dead, series] = await Promise.all([
    db.query<CountRow>(
      `SELECT channel, decision, decided_by, reason, sum(count)::text AS n,
              ARRAY[sum(ms_le_5), sum(ms_le_20), sum(ms_le_50), sum(ms_le_200), sum(ms_le_1000),
                    sum(ms_over)]::text[] AS h
         FROM gateway_decisions WHERE bucket >= $1 AND bucket < $2 AND decision <> $3
        GROUP BY 1, 2, 3, 4`,
      // Spool retries are not deliveries: the health row shows them.
      [range.since, range.until, SPOOL_RETRIED],
    ),
    db.query<{ channel: string; n: string }>(
      `SELECT channel, count(*)::text AS n FROM channel_failures
        WHERE stage = 'inbound' AND created_at >= $1 AND created_at < $2 GROUP BY 1`,
      [range.since, range.until],
    ),
    seriesOf(db, range),
  ])
  const byChannel = new Map<string, { view: ChannelOverview; histogram: number[] }>()
  const entry = (channel: string) => {
    let e = byChannel.get(channel)
    if (!e) {
      e = {
        view: {
          channel,
          counts: emptyCounts(),
          rejected: {},
          forwardedBy: {},
          duplicateRate: null,
          p50: undefined,
          p99: undefined,
          series: series.get(channel) ?? [],
        },
        histogram: new Array<number>(MS_BUCKETS.length + 1).fill(0),
      }
      byChannel.set(channel, e)
    }
    return e
  }
  for (const row of counts) {
    const e = entry(row.channel)
    const category = categoryOf(row.decision, row.decided_by, row.reason)
    const n = Number(row.n)
    if (category) e.view.counts[category] += n
    if (row.decision === 'rejected') {
      const reason = row.reason || 'other'
      e.view.rejected[reason] = (e.view.rejected[reason] ?? 0) + n
    }
    if (category === 'forwarded') {
      e.view.forwardedBy[row.decided_by] = (e.view.forwardedBy[row.decided_by] ?? 0) + n
    }
    row.h.forEach((v, i) => {
      e.histogram[i] = (e.histogram[i] ?? 0) + Number(v)
    })
  }
  for (const row of dead) entry(row.channel).view.counts.dead_lettered += Number(row.n)
  return [...byChannel.values()]
    .map(({ view, histogram }) => {
      const c = view.counts
      const duplicates = c.duplicate_redis + c.duplicate_postgres + c.payload_mismatch
      const carried = c.forwarded + duplicates
      return {
        ...view,
        duplicateRate: carried > 0 ? duplicates / carried : null,
        p50: quantileBound(histogram, 0.5),
        p99: quantileBound(histogram, 0.99),
      }
    })
    .sort((a, b) => a.channel.localeCompare(b.channel))
}

/** At most this many points per chart: the step grows with the range. */
const MAX_POINTS = 60

async function seriesOf(db: Queryable, range: Range): Promise<Map<string, SeriesPoint[]>> {
  const spanSeconds = Math.max(60, (range.until.getTime() - range.since.getTime()) / 1000)
  const step = Math.max(60, Math.ceil(spanSeconds / MAX_POINTS / 60) * 60)
  const rows = await db.query<{
    channel: string
    t: string
    forwarded: string
    duplicate: string
    rejected: string
  }>(
    `SELECT channel,
            floor(extract(epoch FROM bucket) / $3)::bigint * $3 AS t,
            sum(count) FILTER (WHERE decision = 'forwarded')::text AS forwarded,
            sum(count) FILTER (WHERE decision = 'duplicate')::text AS duplicate,
            sum(count) FILTER (WHERE decision = 'rejected')::text AS rejected
       FROM gateway_decisions WHERE bucket >= $1 AND bucket < $2
      GROUP BY 1, 2 ORDER BY 1, 2`,
    [range.since, range.until, step],
  )
  // Every step of the range has a point (zero when nothing was counted): a line, not dots.
  const first = Math.floor(range.since.getTime() / 1000 / step) * step
  const last = Math.floor(range.until.getTime() / 1000 / step) * step
  const out = new Map<string, SeriesPoint[]>()
  for (const r of rows) {
    let points = out.get(r.channel)
    if (!points) {
      points = []
      for (let t = first; t <= last; t += step) {
        points.push({ at: new Date(t * 1000), forwarded: 0, duplicate: 0, rejected: 0 })
      }
      out.set(r.channel, points)
    }
    const point = points[Math.round((Number(r.t) - first) / step)]
    if (!point) continue
    point.forwarded = Number(r.forwarded ?? 0)
    point.duplicate = Number(r.duplicate ?? 0)
    point.rejected = Number(r.rejected ?? 0)
  }
  return out
}
