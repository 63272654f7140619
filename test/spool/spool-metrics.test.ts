/**
 * The spool's backlog and its oldest event's age as `GET /metrics` estimates them
 * (origin/spool-metrics.ts): from the Worker's counters in Redis and the spooled counts per minute.
 * Pure logic; test/local/monitoring.test.ts reads them from real Redis and Postgres.
 */
import { describe, expect, it } from 'vitest'
import { backlogOf, oldestQueuedMinute } from '../../origin/spool-metrics'

describe('the spool backlog', () => {
  it('is queued minus delivered minus dead, per channel; other counters do not count', () => {
    const backlog = backlogOf({
      'spool_queued:slack': 10,
      'spool_delivered:slack': 6,
      'spool_dead:slack': 1,
      'spool_retried:slack': 40,
      'payload_mismatch:slack': 3,
      'spool_queued:line': 2,
      'spool_delivered:line': 2,
    })
    expect(Object.fromEntries(backlog)).toEqual({ slack: 3, line: 0 })
  })

  it('never goes below zero (an increment lost while Redis failed)', () => {
    expect(backlogOf({ 'spool_queued:api': 1, 'spool_delivered:api': 3 }).get('api')).toBe(0)
  })
})

describe('the oldest waiting event', () => {
  // Spooled per minute, newest first: 2 at 300, 5 at 240, 1 at 180.
  const minutes = [
    { at: 300, n: 2 },
    { at: 240, n: 5 },
    { at: 180, n: 1 },
  ]

  it('is in the minute the backlog reaches back to, counting from the newest', () => {
    expect(oldestQueuedMinute(minutes, 1)).toBe(300)
    expect(oldestQueuedMinute(minutes, 2)).toBe(300)
    expect(oldestQueuedMinute(minutes, 3)).toBe(240)
    expect(oldestQueuedMinute(minutes, 8)).toBe(180)
  })

  it('a backlog larger than what was counted: the oldest minute counted; none counted: unknown', () => {
    expect(oldestQueuedMinute(minutes, 50)).toBe(180)
    expect(oldestQueuedMinute([], 3)).toBeNull()
  })
})
