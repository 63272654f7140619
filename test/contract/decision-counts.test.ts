/**
 * The gateway's decision counts (contract/decision-counts.ts) and how the console reads them
 * (origin/console/overview.ts): bucketing, bounds, a failed flush given back, quantiles, columns.
 * Pure logic; the flush over HTTP is in test/gateway/decision-flush.test.ts.
 */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import {
  DecisionBatch,
  DecisionTally,
  MAX_SAMPLED_KEYS,
  MAX_TALLY_ROWS,
  msBucket,
} from '../../contract/decision-counts'
import { categoryOf, quantileBound } from '../../origin/console/overview'
import { tallyDecision } from '../../worker/decision-counters'

const T0 = Date.UTC(2026, 11, 1, 22, 0, 30)
const dup = { channel: 'slack', decision: 'duplicate', decidedBy: 'redis', ms: 3 }

describe('DecisionTally', () => {
  it('adds decisions of one minute, channel, decision, layer and reason into one row', () => {
    const tally = new DecisionTally()
    tally.add(dup, T0)
    tally.add({ ...dup, ms: 40 }, T0 + 10_000)
    tally.add({ ...dup, decidedBy: 'postgres', ms: 900 }, T0)
    tally.add(
      { channel: 'slack', decision: 'rejected', decidedBy: 'gateway', reason: 'bad_signature' },
      T0,
    )
    const batch = tally.take()
    expect(batch && v.parse(DecisionBatch, batch)).toBeTruthy()
    const rows = batch?.rows ?? []
    expect(rows).toHaveLength(3)
    expect(rows[0]).toMatchObject({
      minute: Date.UTC(2026, 11, 1, 22, 0, 0) / 1000,
      count: 2,
      histogram: [1, 0, 1, 0, 0, 0],
    })
    expect(rows[1]).toMatchObject({ decidedBy: 'postgres', histogram: [0, 0, 0, 0, 1, 0] })
    // A refusal is timed by nobody: counted, not in the histogram.
    expect(rows[2]).toMatchObject({
      reason: 'bad_signature',
      count: 1,
      histogram: [0, 0, 0, 0, 0, 0],
    })
    expect(tally.take()).toBeNull()
  })

  it('a failed Redis claim is counted with reason redis_unavailable, not its free-text error', () => {
    const tally = new DecisionTally()
    const failed = {
      channel: 'slack',
      decision: 'forwarded',
      decidedBy: 'postgres',
      redis: 'unavailable',
      reason: 'UpstashError: connect ECONNREFUSED 127.0.0.1:8079',
    }
    tallyDecision(tally, failed, T0)
    tallyDecision(
      tally,
      { ...failed, decision: 'recorded', decidedBy: 'gateway', reason: undefined },
      T0,
    )
    // A free-text reason with Redis fine is not a code: counted with none.
    tallyDecision(tally, { ...failed, redis: 'ok' }, T0)
    expect(tally.take()?.rows.map((r) => [r.decision, r.reason])).toEqual([
      ['forwarded', 'redis_unavailable'],
      ['recorded', 'redis_unavailable'],
      ['forwarded', ''],
    ])
  })

  it('samples keyed decisions up to its bound; the rows stay bounded too', () => {
    const tally = new DecisionTally()
    for (let i = 0; i < MAX_SAMPLED_KEYS + 5; i++)
      tally.add({ ...dup, deliveryKey: `dedup:slack:A:${i}` }, T0)
    expect(tally.take()?.keys).toHaveLength(MAX_SAMPLED_KEYS)
    for (let i = 0; i < MAX_TALLY_ROWS + 3; i++) tally.add({ ...dup, channel: `c${i}` }, T0)
    const batch = tally.take()
    expect(batch?.rows).toHaveLength(MAX_TALLY_ROWS)
    expect(batch?.dropped).toBe(3)
  })

  it('each batch taken has an id of its own (the origin records an id once)', () => {
    const tally = new DecisionTally()
    tally.add(dup, T0)
    const first = tally.take() as DecisionBatch
    tally.add(dup, T0)
    const second = tally.take() as DecisionBatch
    expect(first.id).toMatch(/^[0-9a-f-]{36}$/)
    expect(second.id).not.toBe(first.id)
  })
})

describe('reading the counts', () => {
  it('msBucket: the first bound at or above the time', () => {
    expect([0, 5, 6, 20, 50, 51, 1000, 1001].map(msBucket)).toEqual([0, 0, 1, 1, 2, 3, 4, 5])
  })

  it('quantileBound: the bound of the bucket holding the quantile', () => {
    expect(quantileBound([0, 0, 0, 0, 0, 0], 0.5)).toBeUndefined()
    expect(quantileBound([90, 9, 1, 0, 0, 0], 0.5)).toBe(5)
    expect(quantileBound([90, 9, 1, 0, 0, 0], 0.99)).toBe(20)
    expect(quantileBound([1, 0, 0, 0, 0, 9], 0.5)).toBeNull()
  })

  it('categoryOf: which column, by decision and deciding layer', () => {
    expect(categoryOf('forwarded', 'redis', '')).toBe('forwarded')
    expect(categoryOf('duplicate', 'redis', '')).toBe('duplicate_redis')
    expect(categoryOf('duplicate', 'memo', '')).toBe('duplicate_redis')
    expect(categoryOf('duplicate', 'postgres', '')).toBe('duplicate_postgres')
    expect(categoryOf('duplicate', 'redis', 'payload_mismatch')).toBe('payload_mismatch')
    expect(categoryOf('recorded', 'redis', '')).toBe('ignored')
    // Kept as a dead letter: its own column, never counted as ignored.
    expect(categoryOf('unrecognized', 'gateway', 'line_type_greatNewEvent')).toBe('unrecognized')
    expect(categoryOf('challenge', 'gateway', '')).toBeNull()
  })
})
