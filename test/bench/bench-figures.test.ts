/**
 * The bench's arithmetic, which its reports rest on: open-loop rates as shares of the measured
 * capacity (bench/capacity-figures.ts), the cost per million events at list prices
 * (bench/cost-report.ts), and the row checks of a step whose rows came late (bench/step-rows.ts):
 * a row that appeared by the end of the run passes, one that never did fails.
 */
import { describe, expect, it } from 'vitest'
import { type CapacityReport, rateFromCapacity } from '../../bench/capacity-figures'
import type { CostWindow } from '../../bench/cost'
import { perEvent, perMillion } from '../../bench/cost-report'
import { type RowTally, rowCheckList } from '../../bench/step-rows'

describe('rates from the capacity measured first', () => {
  const capacity = (capacityPerS: number): CapacityReport => ({
    capacityPerS,
    steps: [],
    ceilingFound: true,
    loadAverage1m: 0,
  })

  it('a share, rounded down to tens, within its bounds; the minimum when nothing was measured', () => {
    expect(rateFromCapacity(capacity(400), 1, { min: 20 })).toBe(400)
    expect(rateFromCapacity(capacity(455), 0.5, { min: 20, max: 200 })).toBe(200)
    expect(rateFromCapacity(capacity(150), 0.5, { min: 20, max: 200 })).toBe(70)
    expect(rateFromCapacity(capacity(0), 0.5, { min: 50 })).toBe(50)
    expect(rateFromCapacity(undefined, 1, { min: 20 })).toBe(20)
  })
})

describe('cost per million events', () => {
  const window: CostWindow = {
    name: 'queued',
    label: 'queued',
    events: 200,
    seconds: 2,
    loadAverage1m: 1,
    workerCpuMs: 500,
    worker: {
      'invocation fetch': 200,
      'invocation queue': 4,
      'subrequest Upstash /': 1_000,
      'queue write': 200,
      'queue read': 200,
      'queue delete': 200,
      'r2 class A': 2,
      'r2 class B': 2,
      'kv read': 200,
    },
    redis: { set: 200, eval: 400, hincrby: 400 },
    postgres: { 'SELECT ingest_events': 4 },
    checks: [],
  }

  it('counts per event, priced per platform and summed', () => {
    const p = perEvent(window)
    expect(p.workerCpuMs).toBe(2.5)
    expect(p.invocations).toBeCloseTo(1.02)
    expect(p.redisCommands).toBe(5)
    expect(p.postgresStatements).toBe(0.02)
    const m = perMillion(p)
    expect(m['Workers requests']).toBeCloseTo(0.306)
    expect(m['Workers CPU']).toBeCloseTo(0.05)
    expect(m['Upstash commands']).toBeCloseTo(10)
    expect(m['Queues operations']).toBeCloseTo(1.2)
    expect(m['R2 operations']).toBeCloseTo(0.01 * 4.5 + 0.01 * 0.36)
    expect(m['KV operations']).toBeCloseTo(0.5)
    expect(m.total).toBeCloseTo(0.306 + 0.05 + 10 + 1.2 + 0.0486 + 0.5)
  })
})

describe('row checks of late rows', () => {
  // 206 acknowledged, 202 rows at the step's check, 12 rows of requests cut off at the stop.
  const tally: RowTally = {
    fresh: 'all',
    acked: 206,
    ackedWithRow: 202,
    cutOffWithRow: 12,
    refusedWithRow: 0,
    rows: 214,
    stray: 0,
  }

  it('missing at the check: both row checks fail', () => {
    expect(rowCheckList(tally).map((c) => c.ok)).toEqual([false, false])
  })

  it('all landed by the end of the run: both pass, and say how many came late', () => {
    const checks = rowCheckList(tally, 4)
    expect(checks.map((c) => c.ok)).toEqual([true, true])
    expect(checks[0]?.detail).toMatch(/206 of 206 .* 4 of them only after the step's wait/)
  })

  it('some never landed: still a failure', () => {
    expect(rowCheckList(tally, 3).map((c) => c.ok)).toEqual([false, false])
  })
})
