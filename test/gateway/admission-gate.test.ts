/**
 * The admission gate's bookkeeping (worker/admission.ts), pure logic on a fake clock: the bound,
 * a release given back once only, a request workerd cancelled (never released) no longer counted
 * after STALE_AFTER_MS, the waiters' own bound, and one log line per window however many are refused. The routes are tested in workerd
 * (test/gateway/admission.workers.test.ts).
 */
import { describe, expect, it, vi } from 'vitest'
import { AdmissionGate, LOG_EVERY_MS, noteRefusal, STALE_AFTER_MS } from '../../worker/admission'

function gate(maxInFlight: number, maxWaitMs = 0) {
  let now = 1_000
  const g = new AdmissionGate({ maxInFlight, maxWaitMs }, () => now)
  return { g, advance: (ms: number) => (now += ms) }
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

describe('refusals in the log', () => {
  it('one line per LOG_EVERY_MS, with the count since the last', () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {})
    const limits = { maxInFlight: 2, maxWaitMs: 0 }
    try {
      for (let i = 0; i < 5; i++) noteRefusal(limits, 1_000 + i)
      noteRefusal(limits, 1_000 + LOG_EVERY_MS)
      const lines = log.mock.calls.map(([line]) => JSON.parse(String(line)))
      expect(lines).toEqual([
        expect.objectContaining({ msg: 'admission_refused', refused: 1, maxInFlight: 2 }),
        expect.objectContaining({ msg: 'admission_refused', refused: 5 }),
      ])
    } finally {
      log.mockRestore()
    }
  })
})
