/**
 * The origin's insert path against the raw one-statement INSERT (bench/raw-insert-server.ts), in
 * alternated slices: {@link ROUNDS} rounds of {@link SLICE_S} s of the origin, then the raw INSERT,
 * at the headline concurrency, new events each. On a shared machine whatever else runs falls on
 * both sides alike, where two steps ten seconds apart can each meet a different neighbour. The
 * share (origin events/s ÷ raw events/s, summed over the rounds) is what the origin target is
 * judged on; each slice is a full step (every 2xx has its row, every answer accounted for), and
 * its CPU per event by component is summed the same way.
 * @module
 */

import { signOriginRequests } from './requests'
import type { RunDeps } from './run-deps'
import { TARGET_LABELS } from './scenarios'
import type { StepResult } from './steps'
import { round } from './util'

const ROUNDS = Number(process.env.BENCH_INSERT_ROUNDS ?? 5)
const SLICE_S = 2
/** Requests signed per slice: more than the origin or the raw INSERT answers in a slice here. */
const POOL_PER_S = 4_000

export interface InsertSide {
  events: number
  seconds: number
  eventsPerS: number
  /** CPU µs per acknowledged event, by component, over this side's slices. */
  cpuUsPerEvent: Record<string, number>
}

export interface InsertRatio {
  rounds: number
  sliceS: number
  concurrency: number
  origin: InsertSide
  raw: InsertSide
  /** origin events/s ÷ raw events/s. */
  share: number
  /** The 1-minute load average at each slice's start, in order (origin, raw, origin, ...). */
  loadAverages: number[]
  /** Every slice, for its checks. */
  slices: StepResult[]
}

export async function measureInsertRatio(state: RunDeps): Promise<InsertRatio> {
  const slices: StepResult[] = []
  const originSlices: StepResult[] = []
  const rawSlices: StepResult[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    originSlices.push(await slice(state, 'origin', round))
    rawSlices.push(await slice(state, 'rawInsert', round))
    slices.push(originSlices.at(-1) as StepResult, rawSlices.at(-1) as StepResult)
  }
  const origin = side(originSlices)
  const raw = side(rawSlices)
  return {
    rounds: ROUNDS,
    sliceS: SLICE_S,
    concurrency: state.c50,
    origin,
    raw,
    share: round(origin.eventsPerS / Math.max(raw.eventsPerS, 1), 3),
    loadAverages: slices.map((s) => s.loadAverage1m),
    slices,
  }
}

async function slice(
  state: RunDeps,
  target: 'origin' | 'rawInsert',
  n: number,
): Promise<StepResult> {
  const events = state.factory.fresh(POOL_PER_S * SLICE_S)
  const name = target === 'origin' ? 'origin-insert' : 'raw-insert'
  const { result } = await state.measure({
    id: `${name}, alternated ${n}@${state.c50}`,
    scenario: `${name} (alternated, round ${n})`,
    kind: 'baseline',
    target: TARGET_LABELS[target],
    url: target === 'origin' ? state.stack.origin.url : state.stack.rawInsert.url,
    concurrency: state.c50,
    requests: await signOriginRequests(events),
    // The raw INSERT writes a table of its own: no messages rows to check.
    ...(target === 'origin' ? { events, fresh: 'all' } : { events: [], fresh: 'none' }),
    touchesDatabase: target === 'origin',
    durationS: SLICE_S,
  })
  return result
}

function side(slices: readonly StepResult[]): InsertSide {
  const events = slices.reduce((sum, s) => sum + s.ok2xx, 0)
  const seconds = slices.reduce((sum, s) => sum + s.durationS, 0)
  const cpu: Record<string, number> = {}
  for (const s of slices) {
    for (const [component, ms] of Object.entries(s.cpuMs))
      cpu[component] = (cpu[component] ?? 0) + ms
  }
  const cpuUsPerEvent = Object.fromEntries(
    Object.entries(cpu)
      .filter(([, ms]) => ms > 0)
      .map(([component, ms]) => [component, round((ms * 1000) / Math.max(events, 1), 0)]),
  )
  return {
    events,
    seconds: round(seconds, 2),
    eventsPerS: round(events / seconds, 0),
    cpuUsPerEvent,
  }
}

/** One line for the summary and the notes. */
export function insertRatioLine(r: InsertRatio): string {
  const us = (s: InsertSide, c: string) => s.cpuUsPerEvent[c] ?? 0
  const loads = r.loadAverages
  return (
    `origin insert path against a raw one-statement INSERT, ${r.rounds} alternated rounds of ` +
    `${r.sliceS} s at c=${r.concurrency}: ${r.origin.eventsPerS}/s against ${r.raw.eventsPerS}/s = ` +
    `${round(r.share * 100, 0)} %; origin CPU ${us(r.origin, 'origin')} µs per insert (Postgres ` +
    `${us(r.origin, 'postgres')}), raw INSERT server ${us(r.raw, 'raw insert server')} µs (Postgres ` +
    `${us(r.raw, 'postgres')}); load average ${Math.min(...loads)} to ${Math.max(...loads)}`
  )
}
