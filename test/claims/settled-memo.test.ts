import { describe, expect, it } from 'vitest'
import { SettledMemo, settledMemo } from '../../claims/memo'

describe('SettledMemo', () => {
  const at = (start = 0) => {
    let now = start
    return { now: () => now, advance: (ms: number) => (now += ms) }
  }

  it('answers done only for the key and payload hash it was told', () => {
    const memo = new SettledMemo({ maxEntries: 10, maxAgeMs: 60_000 })
    memo.rememberDone('dedup:slack:A1:Ev1', 'aaaa')
    expect(memo.isDone('dedup:slack:A1:Ev1', 'aaaa')).toBe(true)
    // Another payload under the key (a mismatch) and an unknown key go to Redis.
    expect(memo.isDone('dedup:slack:A1:Ev1', 'bbbb')).toBe(false)
    expect(memo.isDone('dedup:slack:A1:Ev2', 'aaaa')).toBe(false)
  })

  it('forgets an entry after its age', () => {
    const clock = at()
    const memo = new SettledMemo({ maxEntries: 10, maxAgeMs: 1_000 }, clock.now)
    memo.rememberDone('k', 'h')
    clock.advance(1_000)
    expect(memo.isDone('k', 'h')).toBe(true)
    clock.advance(1)
    expect(memo.isDone('k', 'h')).toBe(false)
    expect(memo.size).toBe(0)
  })

  it('holds at most maxEntries, dropping the oldest first', () => {
    const memo = new SettledMemo({ maxEntries: 2, maxAgeMs: 60_000 })
    memo.rememberDone('a', 'h')
    memo.rememberDone('b', 'h')
    memo.rememberDone('a', 'h') // refreshed: now the newest
    memo.rememberDone('c', 'h')
    expect(memo.size).toBe(2)
    expect(memo.isDone('b', 'h')).toBe(false)
    expect(memo.isDone('a', 'h')).toBe(true)
    expect(memo.isDone('c', 'h')).toBe(true)
  })

  it('is off at 0 entries', () => {
    expect(settledMemo({ maxEntries: 0, maxAgeMs: 60_000 })).toBeNull()
    expect(settledMemo({ maxEntries: 1, maxAgeMs: 60_000 })).toBeInstanceOf(SettledMemo)
  })
})
