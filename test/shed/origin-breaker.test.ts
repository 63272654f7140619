/**
 * The shedding breaker's state machine (worker/shed/breaker.ts), as pure logic on a fake clock:
 * closed → open after `tripAfter` bad forwards in a row (failed or slow), open sheds everything
 * for `openMs`, then half-open lets one probe through; a good probe closes it, a bad one opens it
 * again. The in-flight cap sheds while closed. Off (`tripAfter` 0) never sheds.
 */
import { describe, expect, it } from 'vitest'
import { type Admission, OriginBreaker } from '../../worker/shed/breaker'

const SETTINGS = { tripAfter: 3, slowMs: 1_000, openMs: 2_000, maxInflight: 4 }

function breaker(settings = SETTINGS) {
  const clock = { now: 0 }
  return { b: new OriginBreaker(settings, () => clock.now), clock }
}

function forwarded(admission: Admission) {
  if (!admission.forward) throw new Error(`shed: ${admission.reason}`)
  return admission
}

const fail = { ms: 10, ok: false }
const slow = { ms: 1_500, ok: true }
const fast = { ms: 20, ok: true }

describe('the shedding breaker', () => {
  it('waits for a forward at most slowMs while on (then the event is queued), without bound when off', () => {
    expect(forwarded(breaker().b.admit()).waitMs).toBe(1_000)
    const off = breaker({ ...SETTINGS, tripAfter: 0 })
    expect(forwarded(off.b.admit()).waitMs).toBe(Number.POSITIVE_INFINITY)
  })

  it('stays closed while forwards are fast and good', () => {
    const { b } = breaker()
    for (let i = 0; i < 20; i++) forwarded(b.admit()).done(fast)
    expect(b.current).toBe('closed')
  })

  it('opens after tripAfter bad forwards in a row (failed or slow), not before', () => {
    const { b } = breaker()
    forwarded(b.admit()).done(fail)
    forwarded(b.admit()).done(slow)
    forwarded(b.admit()).done(fast) // a good one in between starts the count again
    forwarded(b.admit()).done(fail)
    forwarded(b.admit()).done(slow)
    expect(b.current).toBe('closed')
    forwarded(b.admit()).done(fail)
    expect(b.current).toBe('open')
    expect(b.admit()).toEqual({ forward: false, reason: 'shed_open' })
  })

  it('open: sheds for openMs, then half-open lets one probe through at a time', () => {
    const { b, clock } = breaker()
    for (let i = 0; i < 3; i++) forwarded(b.admit()).done(fail)
    clock.now = 1_999
    expect(b.admit().forward).toBe(false)
    clock.now = 2_000
    expect(b.current).toBe('half-open')
    const probe = forwarded(b.admit())
    expect(b.admit()).toEqual({ forward: false, reason: 'shed_open' })
    probe.done(fast)
    expect(b.current).toBe('closed')
    forwarded(b.admit()).done(fast)
  })

  it('a bad probe opens it again for openMs', () => {
    const { b, clock } = breaker()
    for (let i = 0; i < 3; i++) forwarded(b.admit()).done(fail)
    clock.now = 2_000
    forwarded(b.admit()).done(slow)
    expect(b.current).toBe('open')
    clock.now = 3_999
    expect(b.admit().forward).toBe(false)
    clock.now = 4_000
    forwarded(b.admit()).done(fast)
    expect(b.current).toBe('closed')
  })

  it('a forward let through before it opened proves nothing: only the probe closes it', () => {
    const { b, clock } = breaker()
    const early = forwarded(b.admit())
    for (let i = 0; i < 3; i++) forwarded(b.admit()).done(fail)
    early.done(fast)
    expect(b.current).toBe('open')
    clock.now = 2_000
    const probe = forwarded(b.admit())
    expect(b.current).toBe('half-open')
    probe.done(fast)
    expect(b.current).toBe('closed')
  })

  it('closed: sheds beyond maxInflight forwards in flight, forwards again as they end', () => {
    const { b } = breaker()
    const inflight = [1, 2, 3, 4].map(() => forwarded(b.admit()))
    expect(b.admit()).toEqual({ forward: false, reason: 'shed_inflight' })
    inflight[0]?.done(fast)
    inflight[0]?.done(fast) // reported twice: counted once
    forwarded(b.admit())
    expect(b.admit().forward).toBe(false)
    expect(b.current).toBe('closed')
  })

  it('off (tripAfter 0): always forwards, whatever happens', () => {
    const { b } = breaker({ ...SETTINGS, tripAfter: 0 })
    for (let i = 0; i < 50; i++) forwarded(b.admit()).done(fail)
    const many = Array.from({ length: 50 }, () => forwarded(b.admit()))
    expect(many).toHaveLength(50)
    expect(b.current).toBe('closed')
  })
})

describe('forwards still in flight', () => {
  it('tripAfter forwards in flight for longer than slowMs open it before any of them ends', () => {
    const { b, clock } = breaker({ ...SETTINGS, maxInflight: 0 })
    const pending = [0, 1, 2].map(() => forwarded(b.admit()))
    clock.now = 999
    forwarded(b.admit()) // two of them not slow yet
    clock.now = 1_000
    expect(b.admit()).toEqual({ forward: false, reason: 'shed_open' })
    expect(b.current).toBe('open')
    for (const forward of pending) forward.done({ ms: 1_000, ok: true })
    expect(b.current).toBe('open')
  })
})

describe('closed again after a probe', () => {
  it('forwards one at a time first, the cap doubling with each good forward (slow start)', () => {
    const { b, clock } = breaker({ ...SETTINGS, maxInflight: 8 })
    for (let i = 0; i < 3; i++) forwarded(b.admit()).done(fail)
    clock.now = 2_000
    forwarded(b.admit()).done(fast)
    expect(b.current).toBe('closed')
    const first = forwarded(b.admit())
    expect(b.admit()).toEqual({ forward: false, reason: 'shed_inflight' })
    first.done(fast) // cap 2
    const two = [forwarded(b.admit()), forwarded(b.admit())]
    expect(b.admit().forward).toBe(false)
    for (const f of two) f.done(fast) // cap 4, then 8
    const eight = Array.from({ length: 8 }, () => forwarded(b.admit()))
    expect(b.admit().forward).toBe(false)
    expect(eight).toHaveLength(8)
  })

  it('an origin still behind: a few slow forwards, one at a time, open it again', () => {
    const { b, clock } = breaker()
    for (let i = 0; i < 3; i++) forwarded(b.admit()).done(fail)
    clock.now = 2_000
    forwarded(b.admit()).done(fast)
    let slowOnes = 0
    while (b.current === 'closed') {
      const f = forwarded(b.admit())
      expect(b.admit().forward).toBe(false)
      f.done(slow)
      slowOnes++
    }
    expect(slowOnes).toBe(3)
    expect(b.current).toBe('open')
  })
})
