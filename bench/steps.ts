/**
 * One measured step: send a pool of pre-signed requests at one target and concurrency for a fixed
 * time, then account for every request: its answer, the rows it made in Postgres, what the
 * gateway and origin logged, and the CPU each component used meanwhile.
 *
 * Row checks are per event, not only totals (bench/step-rows.ts).
 * @module
 */

import { loadavg } from 'node:os'
import type pg from 'pg'
import type { CpuSampler, CpuUsage } from './cpu'
import { type LoadGenerator, type LoadResult, type OpenLoopStats, openLoopDeadlineS } from './load'
import type { Counts, LogTally } from './logs'
import type { VendorEvent, WireRequest } from './requests'
import { type LatencySummary, summarize } from './stats'
import {
  awaitAcknowledgedRows,
  type Check,
  is2xx,
  isNewAt,
  lastMessageId,
  type MissingRow,
  type RowTally,
  rowChecks,
  rowKey,
  rowsAfter,
  settle,
} from './step-rows'
import { round } from './util'

export type { Check } from './step-rows'

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
  /**
   * Why the step did not finish (its target was still answering at the load's deadline, or the
   * load generator failed): its figures are what it measured until then. Absent: it finished.
   */
  unfinished?: string
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

export interface StepOutcome {
  result: StepResult
  /** Each request's answer status (0 = none), in pool order. */
  statuses: number[]
  /** Acknowledged new events without their row when checked, for a re-check at the run's end. */
  missingRows?: { rows: MissingRow[]; tally: RowTally }
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
  const { result, unfinished } = await loadOf(ctx, spec, durationS)
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
  let missingRows: StepOutcome['missingRows']
  if (touchesDatabase && spec.events.length > 0) {
    spec.events.forEach((event, i) => {
      if (isNewAt(spec, i)) ctx.freshOwners.set(rowKey(event.channel, event.messageKey), spec.id)
    })
    const rowResult = rowChecks(spec, result.statuses, rows, ctx.freshOwners)
    checks.push(...rowResult.checks)
    notes.push(...rowResult.notes)
    if (rowResult.missing.length > 0) {
      missingRows = { rows: rowResult.missing, tally: rowResult.tally }
    }
  }
  if (!spec.openLoop && result.sent >= spec.requests.length) {
    notes.push(
      `all ${spec.requests.length} requests of the pool were sent in ${round(elapsed, 1)} s: ` +
        'the step was bounded by its request count, not its duration; timed to its last answer',
    )
  }
  // An open loop waits for every answer until its deadline; a closed one may cut off one request
  // per connection.
  const cutOff = spec.openLoop ? (result.openLoop?.unansweredAtDeadline ?? 0) : spec.concurrency
  checks.push({
    name: 'every answer accounted for',
    ok: answered + result.errors >= result.sent - cutOff && result.exhausted === 0,
    detail:
      `${result.sent} sent, ${answered} answered (${ok2xx} 2xx, ${answered - ok2xx} other), ` +
      `${result.errors} errors/timeouts, ${result.sent - answered} unanswered at stop`,
  })
  if (unfinished) notes.push(`did not finish: ${unfinished}`)
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
    ...(unfinished ? { unfinished } : {}),
    notes,
  }
  return { result: stepResult, statuses: result.statuses, ...(missingRows ? { missingRows } : {}) }
}

/**
 * The step's load, and why it did not finish when it did not: an open loop that reached its
 * deadline with requests unanswered, or a load generator that failed (then nothing was measured,
 * and every request counts as unanswered: rows that appear are checked as cut off).
 */
async function loadOf(
  ctx: StepContext,
  spec: StepSpec,
  durationS: number,
): Promise<{ result: LoadResult; unfinished?: string }> {
  try {
    const result = await ctx.load.run({
      url: spec.url,
      requests: spec.requests,
      connections: spec.concurrency,
      durationS,
      timeoutS: ctx.timeoutS,
      ...(spec.openLoop ? { openLoop: spec.openLoop } : {}),
    })
    const left = result.openLoop?.unansweredAtDeadline ?? 0
    if (left === 0) return { result }
    return {
      result,
      unfinished:
        `${left} of ${result.sent} requests still unanswered ${openLoopDeadlineS({ durationS, timeoutS: ctx.timeoutS })} s ` +
        'after the first send (the load stopped waiting; they count as unanswered)',
    }
  } catch (err) {
    const result: LoadResult = {
      id: 0,
      statuses: new Array<number>(spec.requests.length).fill(0),
      latency: summarize([]),
      durationS,
      sent: 0,
      errors: 0,
      timeouts: 0,
      statusCounts: {},
      exhausted: 0,
    }
    return { result, unfinished: `the load generator failed: ${(err as Error).message}` }
  }
}
