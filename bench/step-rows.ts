/**
 * What a step checks in Postgres, per event, not only totals: every new event acknowledged with a
 * 2xx has its row; no row appears that is not one of the step's new events (a replay never makes
 * one); rows of requests cut off at the end of the step (sent, never answered) are counted and
 * shown apart. And the waits before the checks: the stack settled, queued events landed.
 * @module
 */
import type pg from 'pg'
import type { VendorEvent } from './requests'
import { sleep } from './util'

export interface Check {
  name: string
  ok: boolean
  detail: string
}

/** What the row checks need of a step (bench/steps.ts's StepSpec has it). */
export interface RowSpec {
  id: string
  /** The event behind each request (same order). */
  events: readonly VendorEvent[]
  /** Indices of requests that are new events (they must make rows); the rest are replays. */
  fresh: ReadonlySet<number> | 'all' | 'none'
}

export async function lastMessageId(sql: pg.Pool): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    'SELECT coalesce(max(id), 0)::text AS id FROM messages',
  )
  return rows[0]?.id ?? '0'
}

export async function rowsAfter(
  sql: pg.Pool,
  id: string,
): Promise<Array<{ channel: string; key: string }>> {
  const { rows } = await sql.query<{ channel: string; key: string }>(
    'SELECT channel, channel_message_id AS key FROM messages WHERE id > $1',
    [id],
  )
  return rows
}

/**
 * Waits until the target has finished what it started: requests cut off when the load stopped are
 * still being forwarded for a moment. Done when the row count holds still for `stableMs` (600 ms;
 * at most `maxMs`, 5 s). An open-loop step waits longer: what the gateway spooled while the origin
 * was behind (answered 200 at once) lands from the queue afterwards, and its rows are checked too.
 */
export async function settle(
  sql: pg.Pool,
  afterId: string,
  touchesDatabase: boolean,
  { stableMs = 600, maxMs = 5_000 } = {},
): Promise<void> {
  if (!touchesDatabase) {
    await sleep(300)
    return
  }
  let previous = -1
  let stable = 0
  const until = Date.now() + maxMs
  while (Date.now() < until) {
    // A saturated box can time out a new connection: try again on the next round, not fail the run.
    const n = await sql
      .query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE id > $1', [afterId])
      .then(
        ({ rows }) => rows[0]?.n ?? 0,
        () => previous,
      )
    stable = n === previous ? stable + 1 : 0
    previous = n
    if (stable * 200 >= stableMs) return
    await sleep(200)
  }
}

/** How long a step waits for the rows of acknowledged new events that went through the queue. */
const SPOOLED_MAX_MS = 120_000

/**
 * Waits (up to SPOOLED_MAX_MS) until every acknowledged new event of the step is a row. Events the
 * gateway queued (shed: the origin slow, or this one isolate's forwards at SHED_MAX_INFLIGHT) land
 * through the spool consumer, in batches, later again after a retry; the row checks come after.
 */
export async function awaitAcknowledgedRows(
  sql: pg.Pool,
  spec: RowSpec,
  statuses: readonly number[],
): Promise<void> {
  const keys: string[] = []
  spec.events.forEach((event, i) => {
    if (isNewAt(spec, i) && is2xx(statuses[i] ?? 0)) keys.push(event.messageKey)
  })
  if (keys.length === 0) return
  const until = Date.now() + SPOOLED_MAX_MS
  while (Date.now() < until) {
    const landed = await sql
      .query<{ n: number }>(
        'SELECT count(*)::int AS n FROM messages WHERE channel_message_id = ANY($1::text[])',
        [keys],
      )
      .then(
        ({ rows }) => rows[0]?.n ?? 0,
        () => 0,
      )
    if (landed >= keys.length) return
    await sleep(250)
  }
}

/** Whether the step's i-th event is a new one (its row is the step's to check). */
export function isNewAt(spec: RowSpec, i: number): boolean {
  return spec.fresh === 'all' || (spec.fresh !== 'none' && spec.fresh.has(i))
}

export const rowKey = (channel: string, key: string) => `${channel}\u0000${key}`
export const is2xx = (status: number) => status >= 200 && status < 300

/** What a step's row checks counted (kept for a re-check at the end of the run). */
export interface RowTally {
  fresh: RowSpec['fresh']
  acked: number
  ackedWithRow: number
  cutOffWithRow: number
  refusedWithRow: number
  rows: number
  stray: number
}

/** An acknowledged new event without its row when the step was checked. */
export interface MissingRow {
  channel: string
  key: string
}

export function rowChecks(
  spec: RowSpec,
  statuses: readonly number[],
  allRows: ReadonlyArray<{ channel: string; key: string }>,
  freshOwners: ReadonlyMap<string, string>,
): { checks: Check[]; notes: string[]; tally: RowTally; missing: MissingRow[] } {
  // Rows of earlier steps' new events, committed only now (cut off when that step stopped).
  const late = new Map<string, number>()
  const rows = allRows.filter((r) => {
    const owner = freshOwners.get(rowKey(r.channel, r.key))
    if (owner === undefined || owner === spec.id) return true
    late.set(owner, (late.get(owner) ?? 0) + 1)
    return false
  })
  const found = new Set(rows.map((r) => rowKey(r.channel, r.key)))
  const tally: RowTally = {
    fresh: spec.fresh,
    acked: 0,
    ackedWithRow: 0,
    cutOffWithRow: 0,
    refusedWithRow: 0,
    rows: rows.length,
    stray: 0,
  }
  const missing: MissingRow[] = []
  const freshKeys = new Set<string>()
  spec.events.forEach((event, i) => {
    if (!isNewAt(spec, i)) return
    const key = rowKey(event.channel, event.messageKey)
    freshKeys.add(key)
    const status = statuses[i] ?? 0
    if (is2xx(status)) {
      tally.acked++
      if (found.has(key)) tally.ackedWithRow++
      else missing.push({ channel: event.channel, key: event.messageKey })
    } else if (found.has(key)) {
      if (status === 0) tally.cutOffWithRow++
      else tally.refusedWithRow++
    }
  })
  tally.stray = rows.filter((r) => !freshKeys.has(rowKey(r.channel, r.key))).length
  const notes: string[] = [...late].map(
    ([owner, n]) =>
      `${n} late rows of ${owner} (requests cut off when it stopped) committed meanwhile`,
  )
  if (tally.refusedWithRow > 0) {
    notes.push(
      `${tally.refusedWithRow} new events were answered non-2xx but their row exists (the origin ` +
        'committed after the gateway gave up): the vendor retries, Postgres answers duplicate',
    )
  }
  return { checks: rowCheckList(tally), notes, tally, missing }
}

/**
 * The row checks of a tally. `landedLate`: acknowledged events whose rows were missing when the
 * step was checked and appeared by the end of the run (queued on a loaded box, retried with
 * backoff): late, not lost.
 */
export function rowCheckList(tally: RowTally, landedLate = 0): Check[] {
  const { acked, cutOffWithRow, refusedWithRow, stray } = tally
  if (tally.fresh === 'none') {
    return [
      {
        name: 'no new rows (replays only)',
        ok: tally.rows === 0,
        detail: `${tally.rows} rows created`,
      },
    ]
  }
  const withRow = tally.ackedWithRow + landedLate
  const rows = tally.rows + landedLate
  const late = landedLate > 0 ? `, ${landedLate} of them only after the step's wait (late)` : ''
  return [
    {
      name: 'every 2xx new event has its row',
      ok: withRow === acked,
      detail: `${withRow} of ${acked} acknowledged new events have a row${late}`,
    },
    {
      name: 'rows == 2xx new events (+ cut off at stop)',
      ok: stray === 0 && rows === acked + cutOffWithRow + refusedWithRow,
      detail:
        `${rows} rows = ${acked} acknowledged + ${cutOffWithRow} cut off when the load ` +
        `stopped + ${refusedWithRow} answered non-2xx after the origin committed; ${stray} rows ` +
        'of no new event',
    },
  ]
}

/** How many of `missing` are rows now. */
export async function rowsFound(sql: pg.Pool, missing: readonly MissingRow[]): Promise<number> {
  if (missing.length === 0) return 0
  const { rows } = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM messages m
       JOIN unnest($1::text[], $2::text[]) AS k(channel, key)
         ON m.channel = k.channel AND m.channel_message_id = k.key`,
    [missing.map((m) => m.channel), missing.map((m) => m.key)],
  )
  return rows[0]?.n ?? 0
}
