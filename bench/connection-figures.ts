/**
 * The connections phase's figures (bench/connections-phase.ts), pure: one case's CPU and latency
 * from its samples, two cases against the 10 % goal of issue 30 (verification with 100,000
 * connections in KV within 10 % of it with 1), the KV bytes one connection takes (its `conn:<id>`
 * record and its index entries), and the lines the report prints.
 * @module
 */
import { type EdgeConnection, kvKeys } from '../contract/connection'
import { indexKeys } from '../origin/connections/edge-record'
import type { MissBreakdown } from './connection-breakdown'
import { percentile } from './stats'
import { fmt, round } from './util'

/** 100,000 connections may cost at most this much more than 1, in CPU and in p50. */
export const GOAL_RATIO = 1.1

/** One request shape against one registry, over its rounds. */
export interface CaseFigure {
  name: string
  label: string
  requests: number
  /** workerd CPU (user + system, /proc) over the case's rounds ÷ its requests. */
  cpuUsPerRequest: number
  /** Each round's workerd CPU µs per request: the noise of the figure above. */
  roundsCpuUs: number[]
  p50Ms: number
  p99Ms: number
  /** Answers by HTTP status (every one 200 when the case is what it says). */
  statuses: Record<string, number>
}

export interface CaseSample {
  ms: number
  status: number
}

export function caseFigure(
  name: string,
  label: string,
  samples: readonly CaseSample[],
  rounds: ReadonlyArray<{ cpuMs: number; requests: number }>,
): CaseFigure {
  const sorted = Float64Array.from(samples.map((s) => s.ms)).sort()
  const statuses: Record<string, number> = {}
  for (const sample of samples) statuses[sample.status] = (statuses[sample.status] ?? 0) + 1
  const cpuMs = rounds.reduce((sum, r) => sum + r.cpuMs, 0)
  const requests = rounds.reduce((sum, r) => sum + r.requests, 0)
  return {
    name,
    label,
    requests: samples.length,
    cpuUsPerRequest: requests > 0 ? round((cpuMs * 1000) / requests, 0) : 0,
    roundsCpuUs: rounds.map((r) => (r.requests > 0 ? round((r.cpuMs * 1000) / r.requests, 0) : 0)),
    p50Ms: round(percentile(sorted, 50), 3),
    p99Ms: round(percentile(sorted, 99), 3),
    statuses,
  }
}

/** `of` against `against`: the ratios, and whether both are within {@link GOAL_RATIO}. */
export interface Comparison {
  of: string
  against: string
  cpuRatio: number
  p50Ratio: number
  withinGoal: boolean
}

export function compare(of: CaseFigure, against: CaseFigure): Comparison {
  const ratio = (a: number, b: number) => (b > 0 ? round(a / b, 2) : Number.POSITIVE_INFINITY)
  const cpuRatio = ratio(of.cpuUsPerRequest, against.cpuUsPerRequest)
  const p50Ratio = ratio(of.p50Ms, against.p50Ms)
  return {
    of: of.name,
    against: against.name,
    cpuRatio,
    p50Ratio,
    withinGoal: cpuRatio <= GOAL_RATIO && p50Ratio <= GOAL_RATIO,
  }
}

/** "1.04× CPU, 0.98× p50: within the 10 % goal" */
export function describeComparison(c: Comparison): string {
  const verdict = c.withinGoal ? 'within' : 'NOT within'
  return (
    `${c.of} against ${c.against}: ${c.cpuRatio}× CPU, ${c.p50Ratio}× p50 ` +
    `(${verdict} the ${round((GOAL_RATIO - 1) * 100, 0)} % goal)`
  )
}

/** "route, 100,000 in KV, memo miss: 812 µs CPU (rounds 790–850), p50 1.21 ms, p99 2.4 ms" */
export function describeCase(c: CaseFigure): string {
  const rounds = [...c.roundsCpuUs].sort((a, b) => a - b)
  const others = Object.entries(c.statuses).filter(([status]) => status !== '200')
  return (
    `${c.label}: ${fmt(c.cpuUsPerRequest)} µs workerd CPU per request (rounds ` +
    `${fmt(rounds[0])}–${fmt(rounds[rounds.length - 1])}), p50 ${c.p50Ms} ms, p99 ${c.p99Ms} ms, ` +
    `${fmt(c.requests)} requests` +
    (others.length ? `; NOT 200: ${others.map(([s, n]) => `${n}× ${s}`).join(', ')}` : '')
  )
}

const utf8Bytes = (text: string) => new TextEncoder().encode(text).byteLength

/** What one connection stores in KV: the record's key and JSON value, and its index entries. */
export interface KindBytes {
  channel: string
  /** The JSON value of `conn:<id>`, as the publisher writes it (JSON.stringify). */
  valueBytes: number
  keyBytes: number
  indexEntries: number
  /** Keys and values (the connection id) of the index entries. */
  indexBytes: number
  totalBytes: number
}

export function kindBytes(record: EdgeConnection): KindBytes {
  const valueBytes = utf8Bytes(JSON.stringify(record))
  const keyBytes = utf8Bytes(kvKeys.connection(record.id))
  const index = indexKeys(record)
  const indexBytes = index.reduce((sum, key) => sum + utf8Bytes(key) + utf8Bytes(record.id), 0)
  return {
    channel: record.channel,
    valueBytes,
    keyBytes,
    indexEntries: index.length,
    indexBytes,
    totalBytes: valueBytes + keyBytes + indexBytes,
  }
}

/** "line 512 B (record 480 + key 31; 1 index entry 66 B): 578 B" */
export function describeBytes(b: KindBytes): string {
  const entries = `${b.indexEntries} index entr${b.indexEntries === 1 ? 'y' : 'ies'}`
  return (
    `${b.channel}: ${fmt(b.totalBytes)} B (record ${fmt(b.valueBytes)} + key ${b.keyBytes}; ` +
    `${entries} ${fmt(b.indexBytes)} B)`
  )
}

/** How long a change at the origin took to be enforced, over the trials, ms. */
export interface ChangeFigure {
  memoSeconds: number
  trialsMs: number[]
  medianMs: number
  maxMs: number
}

export function changeFigure(memoSeconds: number, trialsMs: readonly number[]): ChangeFigure {
  const sorted = Float64Array.from(trialsMs).sort()
  return {
    memoSeconds,
    trialsMs: trialsMs.map((ms) => round(ms, 0)),
    medianMs: round(percentile(sorted, 50), 0),
    maxMs: round(sorted[sorted.length - 1] ?? 0, 0),
  }
}

/**
 * The bound in production, seconds: KV's "up to 60 seconds (or the duration of the cacheTtl)"
 * for a change to reach a location (the larger of the two; KV adds an unstated "or more"), then
 * the isolate's memo on top.
 */
export function productionBoundS(memoSeconds: number, cacheTtlSeconds = 30): number {
  return Math.max(60, cacheTtlSeconds) + memoSeconds
}

export interface ConnectionsReport {
  runtime: string
  fill: { records: number; sealS: number; putS: number; putsPerS: number }
  cases: CaseFigure[]
  comparisons: Comparison[]
  change: ChangeFigure
  bytes: KindBytes[]
  /** The miss's steps besides the KV get, timed in workerd. */
  breakdown: MissBreakdown
}

/** "a miss costs 820 µs more than a hit: parse 12, open 45, config 8 µs (Node); the rest ..." */
export function describeBreakdown(r: ConnectionsReport): string | null {
  const miss = r.cases.find((c) => c.name === 'route-100k-miss')
  const hit = r.cases.find((c) => c.name === 'route-100k-hit')
  if (!miss || !hit) return null
  const extra = miss.cpuUsPerRequest - hit.cpuUsPerRequest
  const b = r.breakdown
  const steps = round(b.parse + b.open + b.config, 0)
  return (
    `a memo miss costs ${fmt(extra)} µs of workerd CPU more than a hit; of it, each step timed in ` +
    `workerd (${fmt(b.callsPerRound)} calls a request, median of ${b.rounds}): JSON.parse + schema ` +
    `${b.parse} µs, the secret opened (AES-KW + AES-GCM) ${b.open} µs, the channel's config ` +
    `${b.config} µs (${steps} µs in all); the other ${fmt(extra - steps)} µs are the KV get ` +
    "(Miniflare's store, in the same workerd process), the second memo's entry and the " +
    'bookkeeping'
  )
}

/** The memo's default (worker/connections/settings.ts CONNECTION_CACHE_SECONDS). */
export const DEFAULT_MEMO_SECONDS = 30

/** The phase's lines for the report and its notes. */
export function connectionsLines(r: ConnectionsReport): string[] {
  const { change, fill } = r
  return [
    `fill: ${fmt(fill.records)} records sealed in ${fill.sealS} s, put in ${fill.putS} s ` +
      `(${fmt(fill.putsPerS)} puts/s)`,
    ...r.cases.map(describeCase),
    ...r.comparisons.map(describeComparison),
    ...(describeBreakdown(r) === null ? [] : [describeBreakdown(r) as string]),
    `a change at the origin (a new record version put) enforced at the edge in ${fmt(change.medianMs)} ms ` +
      `(median of ${change.trialsMs.length}; at most ${fmt(change.maxMs)} ms) with ` +
      `CONNECTION_CACHE_SECONDS=${change.memoSeconds}: locally bounded by the memo alone, so at most ` +
      `${DEFAULT_MEMO_SECONDS} s with the default; in production about ` +
      `${productionBoundS(DEFAULT_MEMO_SECONDS)} s (KV's "up to 60 seconds or more" with cacheTtl 30, ` +
      'then the memo), and KV states no upper bound',
    `KV bytes per connection: ${r.bytes.map(describeBytes).join('; ')}`,
  ]
}
