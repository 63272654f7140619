/**
 * One measured step: send a pool of pre-signed requests at one target and concurrency for a fixed
 * time, then account for every request: its answer, the rows it made in Postgres, what the
 * gateway and origin logged, and the CPU each component used meanwhile.
 *
 * Row checks are per event, not only totals: every new event acknowledged with a 2xx has its row;
 * no row appears that is not one of this step's new events (a replay never makes one); rows of
 * requests cut off at the end of the step (sent, never answered) are counted and shown apart.
 * @module
 */

import { loadavg } from 'node:os'
import type pg from 'pg'
import type { CpuSampler, CpuUsage } from './cpu'
import type { LoadGenerator, OpenLoopStats } from './load'
import type { Counts, LogTally } from './logs'
import type { VendorEvent, WireRequest } from './requests'
import type { LatencySummary } from './stats'
import { round, sleep } from './util'

export type StepKind = 'scenario' | 'baseline'

export interface StepSpec {
  /** Unique within the run, e.g. `first-seen@50`. */
  id: string
  scenario: string
  kind: StepKind
  /** What served it: "gateway (Miniflare)", "origin (direct)", ... */
  target: string
  url: string
  concurrency: number
  requests: WireRequest[]
  /** The event behind each request (same order); empty where requests are not events. */
  events: VendorEvent[]
  /** Indices of requests that are new events (they must make rows); the rest are replays. */
  fresh: ReadonlySet<number> | 'all' | 'none'
  /** False for targets that never touch Postgres (verify-only, Upstash). @default true */
  touchesDatabase?: boolean
  /** Id of the step this one is compared with (ratio of events/s). */
  baselineId?: string
  /** @default the run's step duration */
  durationS?: number
  /** Open loop: this many requests a second for the duration, whatever the answers. */
  openLoop?: { ratePerS: number }
}

export interface Check {
  name: string
  ok: boolean
  detail: string
}

export interface StepResult {
  id: string
  scenario: string
  kind: StepKind
  target: string
  concurrency: number
  durationS: number
  sent: number
  answered: number
  ok2xx: number
  /** Answered, not 2xx. */
  non2xx: number
  status5xx: number
  /** Timeouts and connection errors (no answer). */
  errors: number
  statusCounts: Record<string, number>
  /** 2xx answers per second: events the target took. */
  eventsPerS: number
  requestsPerS: number
  latency: LatencySummary
  rowsCreated: number | null
  rowsPerS: number | null
  baselineId?: string
  /** events/s of this step ÷ events/s of its baseline. */
  ratio?: number
  checks: Check[]
  logCounts: Counts
  cpuMs: CpuUsage
  /** The machine's 1-minute load average when the step started (others' work included). */
  loadAverage1m: number
  /** Open-loop steps: rate achieved, backlog, drain (bench/open-loop.ts). */
  openLoop?: OpenLoopStats
  notes: string[]
}

export interface StepContext {
  load: LoadGenerator
  sql: pg.Pool
  sampler: CpuSampler
  tally: LogTally
  durationS: number
  /** Seconds before an unanswered request counts as timed out. */
  timeoutS: number
  /**
   * Row key → id of the step whose new event it is, over the whole run: a row that turns up late
   * (its request was cut off when an earlier step stopped) is that step's, not a replay's.
   */
  freshOwners: Map<string, string>
}

async function lastMessageId(sql: pg.Pool): Promise<string> {
  const { rows } = await sql.query<{ id: string }>(
    'SELECT coalesce(max(id), 0)::text AS id FROM messages',
  )
  return rows[0]?.id ?? '0'
}

async function rowsAfter(
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
async function settle(
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
async function awaitAcknowledgedRows(
  sql: pg.Pool,
  spec: StepSpec,
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
function isNewAt(spec: StepSpec, i: number): boolean {
  return spec.fresh === 'all' || (spec.fresh !== 'none' && spec.fresh.has(i))
}

const rowKey = (channel: string, key: string) => `${channel}\u0000${key}`
const is2xx = (status: number) => status >= 200 && status < 300

function rowChecks(
  spec: StepSpec,
  statuses: readonly number[],
  allRows: ReadonlyArray<{ channel: string; key: string }>,
  freshOwners: ReadonlyMap<string, string>,
): { checks: Check[]; notes: string[] } {
  // Rows of earlier steps' new events, committed only now (cut off when that step stopped).
  const late = new Map<string, number>()
  const rows = allRows.filter((r) => {
    const owner = freshOwners.get(rowKey(r.channel, r.key))
    if (owner === undefined || owner === spec.id) return true
    late.set(owner, (late.get(owner) ?? 0) + 1)
    return false
  })
  const found = new Set(rows.map((r) => rowKey(r.channel, r.key)))
  let acked = 0
  let ackedWithRow = 0
  let cutOffWithRow = 0
  let refusedWithRow = 0
  const freshKeys = new Set<string>()
  spec.events.forEach((event, i) => {
    if (!isNewAt(spec, i)) return
    const key = rowKey(event.channel, event.messageKey)
    freshKeys.add(key)
    const status = statuses[i] ?? 0
    if (is2xx(status)) {
      acked++
      if (found.has(key)) ackedWithRow++
    } else if (found.has(key)) {
      if (status === 0) cutOffWithRow++
      else refusedWithRow++
    }
  })
  const stray = rows.filter((r) => !freshKeys.has(rowKey(r.channel, r.key))).length
  const checks: Check[] = []
  const notes: string[] = [...late].map(
    ([owner, n]) =>
      `${n} late rows of ${owner} (requests cut off when it stopped) committed meanwhile`,
  )
  if (spec.fresh === 'none') {
    checks.push({
      name: 'no new rows (replays only)',
      ok: rows.length === 0,
      detail: `${rows.length} rows created`,
    })
    return { checks, notes }
  }
  checks.push({
    name: 'every 2xx new event has its row',
    ok: ackedWithRow === acked,
    detail: `${ackedWithRow} of ${acked} acknowledged new events have a row`,
  })
  checks.push({
    name: 'rows == 2xx new events (+ cut off at stop)',
    ok: stray === 0 && rows.length === acked + cutOffWithRow + refusedWithRow,
    detail:
      `${rows.length} rows = ${acked} acknowledged + ${cutOffWithRow} cut off when the load ` +
      `stopped + ${refusedWithRow} answered non-2xx after the origin committed; ${stray} rows ` +
      'of no new event',
  })
  if (refusedWithRow > 0) {
    notes.push(
      `${refusedWithRow} new events were answered non-2xx but their row exists (the origin ` +
        'committed after the gateway gave up): the vendor retries, Postgres answers duplicate',
    )
  }
  return { checks, notes }
}

export interface StepOutcome {
  result: StepResult
  /** Each request's answer status (0 = none), in pool order. */
  statuses: number[]
}

/** Runs one step and returns everything measured about it. */
export async function runStep(ctx: StepContext, spec: StepSpec): Promise<StepOutcome> {
  const touchesDatabase = spec.touchesDatabase ?? true
  const durationS = spec.durationS ?? ctx.durationS
  // Start from a quiet stack: what the previous step left in flight is finished first.
  await settle(ctx.sql, await lastMessageId(ctx.sql), true)
  const startId = touchesDatabase ? await lastMessageId(ctx.sql) : '0'
  ctx.tally.take()
  const loadAverage1m = round(loadavg()[0] ?? 0, 2)
  const cpuBefore = await ctx.sampler.read()
  const result = await ctx.load.run({
    url: spec.url,
    requests: spec.requests,
    connections: spec.concurrency,
    durationS,
    timeoutS: ctx.timeoutS,
    ...(spec.openLoop ? { openLoop: spec.openLoop } : {}),
  })
  await settle(
    ctx.sql,
    startId,
    touchesDatabase,
    spec.openLoop ? { stableMs: 5_000, maxMs: 120_000 } : {},
  )
  if (touchesDatabase) await awaitAcknowledgedRows(ctx.sql, spec, result.statuses)
  const cpuMs = await ctx.sampler.since(cpuBefore)
  const logCounts = ctx.tally.take()
  const rows = touchesDatabase ? await rowsAfter(ctx.sql, startId) : []

  // Rows of this step (late rows of earlier steps are theirs, shown in the notes).
  const ownRows = rows.filter((r) => {
    const owner = ctx.freshOwners.get(rowKey(r.channel, r.key))
    return owner === undefined || owner === spec.id
  }).length
  const answered = result.statuses.filter((s) => s !== 0).length
  const ok2xx = result.statuses.filter(is2xx).length
  const status5xx = result.statuses.filter((s) => s >= 500).length
  const elapsed = result.durationS || durationS
  const checks: Check[] = []
  const notes: string[] = []
  if (touchesDatabase && spec.events.length > 0) {
    spec.events.forEach((event, i) => {
      if (isNewAt(spec, i)) ctx.freshOwners.set(rowKey(event.channel, event.messageKey), spec.id)
    })
    const rowResult = rowChecks(spec, result.statuses, rows, ctx.freshOwners)
    checks.push(...rowResult.checks)
    notes.push(...rowResult.notes)
  }
  if (!spec.openLoop && result.sent >= spec.requests.length) {
    notes.push(
      `all ${spec.requests.length} requests of the pool were sent in ${round(elapsed, 1)} s: ` +
        'the step was bounded by its request count, not its duration; timed to its last answer',
    )
  }
  // An open loop waits for every answer; a closed one may cut off one request per connection.
  const cutOff = spec.openLoop ? 0 : spec.concurrency
  checks.push({
    name: 'every answer accounted for',
    ok: answered + result.errors >= result.sent - cutOff && result.exhausted === 0,
    detail:
      `${result.sent} sent, ${answered} answered (${ok2xx} 2xx, ${answered - ok2xx} other), ` +
      `${result.errors} errors/timeouts, ${result.sent - answered} unanswered at stop`,
  })
  const stepResult: StepResult = {
    id: spec.id,
    scenario: spec.scenario,
    kind: spec.kind,
    target: spec.target,
    concurrency: spec.concurrency,
    durationS: round(elapsed, 2),
    sent: result.sent,
    answered,
    ok2xx,
    non2xx: answered - ok2xx,
    status5xx,
    errors: result.errors,
    statusCounts: result.statusCounts,
    eventsPerS: round(ok2xx / elapsed, 0),
    requestsPerS: round(answered / elapsed, 0),
    latency: result.latency,
    rowsCreated: touchesDatabase ? ownRows : null,
    rowsPerS: touchesDatabase ? round(ownRows / elapsed, 0) : null,
    baselineId: spec.baselineId,
    checks,
    logCounts,
    cpuMs,
    loadAverage1m,
    ...(result.openLoop ? { openLoop: result.openLoop } : {}),
    notes,
  }
  return { result: stepResult, statuses: result.statuses }
}
