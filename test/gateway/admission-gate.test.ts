/**
 * The admission gate's bookkeeping (worker/admission.ts), pure logic on a fake clock: the bound,
 * a release given back once only, a request workerd cancelled (never released) no longer counted
 * after STALE_AFTER_MS, the waiters' own bound, and one log line per window however many are
 * refused; the bound that drops while even the quickest request is over the delay target, or
 * none is answered for a while (a stall), and grows back once it is not
 * (worker/admission-limit.ts). The routes are tested in workerd
 * (test/gateway/admission.workers.test.ts).
 */
import { describe, expect, it, vi } from 'vitest'
import {
  AdmissionGate,
  LOG_EVERY_MS,
  noteRefusal,
  type Release,
  STALE_AFTER_MS,
} from '../../worker/admission'
import { INTERVAL_MS, MIN_BOUND, STALL_TARGETS } from '../../worker/admission-limit'

function gate(maxInFlight: number, maxWaitMs = 0, targetMs = 0) {
  let now = 1_000
  const g = new AdmissionGate({ maxInFlight, maxWaitMs, targetMs }, () => now)
  return { g, advance: (ms: number) => (now += ms) }
}

/** `n` admitted at once (each must be). */
async function admitAll(g: AdmissionGate, n: number): Promise<Release[]> {
  const releases: Release[] = []
  for (let i = 0; i < n; i++) {
    const release = await g.enter()
    if (!release) throw new Error(`refused at ${i} of ${n}`)
    releases.push(release)
  }
  return releases
}

describe('AdmissionGate', () => {
  it('admits up to the bound; a release twice frees one place only', async () => {
    const { g } = gate(2)
    const first = await g.enter()
    const second = await g.enter()
    expect(first && second).toBeTruthy()
    expect(await g.enter()).toBeNull()
    first?.()
    first?.()
    expect(g.inFlight).toBe(1)
    expect(await g.enter()).not.toBeNull()
    expect(await g.enter()).toBeNull()
  })

  it('a request never released stops counting after STALE_AFTER_MS', async () => {
    const { g, advance } = gate(1)
    expect(await g.enter()).not.toBeNull()
    advance(STALE_AFTER_MS - 1)
    expect(await g.enter()).toBeNull()
    advance(1)
    expect(await g.enter()).not.toBeNull()
  })

  it('waiters: at most as many as the bound; a release wakes the first', async () => {
    const { g } = gate(1, 60_000)
    const held = await g.enter()
    const waiting = g.enter()
    // The bound is 1: a second waiter is refused at once.
    expect(await g.enter()).toBeNull()
    held?.()
    const admitted = await waiting
    expect(admitted).not.toBeNull()
    expect(g.inFlight).toBe(1)
  })

  it('0: no bound', async () => {
    const { g } = gate(0)
    for (let i = 0; i < 1_000; i++) expect(await g.enter()).not.toBeNull()
  })
})

describe('AdmissionGate: the bound follows the delay target', () => {
  const TARGET = 100

  /** `n` admitted, each held `ms`, released together (the first release takes the step). */
  async function slowRound(g: AdmissionGate, advance: (ms: number) => void, n: number, ms: number) {
    const held = await admitAll(g, n)
    advance(ms)
    for (const release of held) release()
  }

  it('the bound reached and even the quickest over the target: it drops below MAX_IN_FLIGHT', async () => {
    const { g, advance } = gate(100, 0, TARGET)
    await slowRound(g, advance, 100, 2 * TARGET)
    // 100 in flight (the bound) and the quickest took twice the target: 100 × 1/2.
    expect(g.bound).toBe(50)
    await admitAll(g, 50)
    expect(await g.enter()).toBeNull()
  })

  it('the same with ADMISSION_TARGET_MS=0: MAX_IN_FLIGHT alone', async () => {
    const { g, advance } = gate(100, 0, 0)
    await slowRound(g, advance, 100, 2 * TARGET)
    expect(g.bound).toBe(100)
    await admitAll(g, 100)
    expect(await g.enter()).toBeNull()
  })

  it('a bound not reached is not lowered (a closed loop of clients, a slow origin)', async () => {
    const { g, advance } = gate(256, 0, TARGET)
    await slowRound(g, advance, 100, 10 * TARGET)
    expect(g.bound).toBe(256)
  })

  it('a step judges only requests admitted since the last drop; at the target it grows back to the ceiling', async () => {
    const { g, advance } = gate(64, 0, TARGET)
    const held = await admitAll(g, 64)
    advance(4 * TARGET)
    for (const release of held.slice(0, 32)) release()
    // 64 in flight, the quickest 4× the target: 16.
    expect(g.bound).toBe(16)
    // Admitted before the drop, as slow, released in the next window: not judged again.
    advance(INTERVAL_MS)
    for (const release of held.slice(32)) release()
    expect(g.bound).toBe(16)
    // Quick again: the bound grows by its square root a step, up to MAX_IN_FLIGHT.
    for (let step = 0; step < 20; step++) await slowRound(g, advance, 2, INTERVAL_MS)
    expect(g.bound).toBe(64)
  })

  it('a stall (no release for STALL_TARGETS targets, half the bound in flight): the bound drops at the next arrival', async () => {
    const { g, advance } = gate(256, 0, TARGET)
    await admitAll(g, 200)
    advance(STALL_TARGETS * TARGET - 1)
    expect(await g.enter()).not.toBeNull()
    advance(1)
    // 201 in flight, none answered for 5 targets: 201 × 1/5 = 40, and this one is refused.
    expect(await g.enter()).toBeNull()
    expect(g.bound).toBe(40)

    const counted = gate(256, 0, 0)
    await admitAll(counted.g, 200)
    counted.advance(STALL_TARGETS * TARGET)
    expect(await counted.g.enter()).not.toBeNull()
  })

  it('a burst into an idle isolate is no stall', async () => {
    const { g, advance } = gate(256, 0, TARGET)
    ;(await g.enter())?.()
    advance(60_000)
    await admitAll(g, 256)
    expect(g.bound).toBe(256)
  })

  it('never under MIN_BOUND', async () => {
    const { g, advance } = gate(256, 0, TARGET)
    for (let step = 0; step < 10; step++) await slowRound(g, advance, g.bound, 10 * TARGET)
    expect(g.bound).toBe(MIN_BOUND)
  })
})

describe('refusals in the log', () => {
  it('one line per LOG_EVERY_MS, with the count since the last', () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {})
    const limits = { maxInFlight: 2, maxWaitMs: 0, targetMs: 100 }
    try {
      for (let i = 0; i < 5; i++) noteRefusal(limits, 2, 1_000 + i)
      noteRefusal(limits, 1, 1_000 + LOG_EVERY_MS)
      const lines = log.mock.calls.map(([line]) => JSON.parse(String(line)))
      expect(lines).toEqual([
        expect.objectContaining({ msg: 'admission_refused', refused: 1, maxInFlight: 2, bound: 2 }),
        expect.objectContaining({ msg: 'admission_refused', refused: 5, bound: 1 }),
      ])
    } finally {
      log.mockRestore()
    }
  })
})
