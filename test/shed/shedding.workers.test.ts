/**
 * Shedding in workerd (worker/shed/breaker.ts through the delivery core), against real Redis and
 * the test origin: with the origin slow, an isolate stops waiting for it after a few slow
 * forwards and puts first-seen events straight on the spool queue (answered in milliseconds,
 * `spooled`, the origin not called); once it has been open for SHED_OPEN_MS one delivery probes
 * the origin, and when that is fast again forwarding resumes.
 */
import { describe, expect, it } from 'vitest'
import { type SignedDelivery, slackDelivery } from '../../local/vendor-deliveries'
import type { Env } from '../../worker/env'
import type { SpoolMessage } from '../../worker/spool/message'
import { SPOOLED_VALUE } from '../support/claim-values'
import { type Harness, harness } from '../support/workerd/harness'
import { RecordingQueue } from '../support/workerd/queues'

function shedding(overrides: Partial<Env> = {}, queueRefuses = false) {
  const spool = new RecordingQueue<SpoolMessage>(queueRefuses)
  const h = harness({
    SHED_AFTER_FAILURES: '2',
    SHED_SLOW_MS: '300',
    SHED_OPEN_MS: '800',
    SPOOL: spool as unknown as Env['SPOOL'],
    SPOOL_DEAD: new RecordingQueue() as unknown as Env['SPOOL_DEAD'],
    ...overrides,
  })
  return { h, spool }
}

/** A delivery's answer, and how long it took (the `waitUntil` work after it not counted). */
async function timed(h: Harness, delivery: SignedDelivery) {
  const { response, answeredMs } = await h.sendTimed(delivery)
  return {
    ms: answeredMs,
    status: response.status,
    decision: response.headers.get('x-dedup-decision'),
  }
}

describe('shedding under a slow origin', () => {
  it('after a few slow forwards, first-seen events are queued at once; a fast probe resumes forwarding', async () => {
    const { h, spool } = shedding()
    await h.setOriginMode({ kind: 'delay', ms: 700 })
    // Slow: each is waited for SHED_SLOW_MS (300 ms), not the origin's 700, then queued; each
    // counts as a bad forward.
    for (let i = 0; i < 2; i++) {
      const slow = await timed(h, slackDelivery())
      expect(slow).toMatchObject({ status: 200, decision: 'spooled' })
      expect(slow.ms).toBeGreaterThanOrEqual(300)
      expect(slow.ms).toBeLessThan(650)
    }
    const shed = Array.from({ length: 5 }, () => slackDelivery())
    for (const delivery of shed) {
      const answer = await timed(h, delivery)
      expect(answer).toMatchObject({ status: 200, decision: 'spooled' })
      expect(answer.ms).toBeLessThan(500)
      expect(await h.redisGet(delivery.deliveryKey)).toMatch(SPOOLED_VALUE)
    }
    // The two abandoned forwards, then the five shed at once.
    expect(spool.sent.map((m) => m.event.deliveryKey).slice(2)).toEqual(
      shed.map((d) => d.deliveryKey),
    )
    expect((await h.originCalls()).calls).toHaveLength(2)

    // The origin recovers; after SHED_OPEN_MS one delivery probes it, then forwarding resumes.
    await h.setOriginMode({ kind: 'ok' })
    await new Promise((resolve) => setTimeout(resolve, 900))
    for (let i = 0; i < 3; i++) {
      expect(await timed(h, slackDelivery())).toMatchObject({ decision: 'forwarded' })
    }
    expect(spool.sent).toHaveLength(7)
    expect((await h.originCalls()).calls).toHaveLength(5)
  })

  it('a replay of a shed event is a duplicate, and the origin is not called', async () => {
    const { h } = shedding()
    await h.setOriginMode({ kind: 'delay', ms: 400 })
    for (let i = 0; i < 2; i++) await h.send(slackDelivery())
    const delivery = slackDelivery()
    expect((await timed(h, delivery)).decision).toBe('spooled')
    expect((await timed(h, delivery)).decision).toBe('duplicate')
    expect((await h.originCalls()).calls).toHaveLength(2)
  })

  it('a slow forward whose event the queue refuses is waited for after all: forwarded, not a retry', async () => {
    const { h, spool } = shedding({}, true)
    await h.setOriginMode({ kind: 'delay', ms: 700 })
    const delivery = slackDelivery()
    const answer = await timed(h, delivery)
    expect(answer).toMatchObject({ status: 200, decision: 'forwarded' })
    expect(answer.ms).toBeGreaterThanOrEqual(700)
    expect(spool.sent).toEqual([])
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('off (SHED_AFTER_FAILURES=0): every delivery waits for the slow origin', async () => {
    const { h, spool } = shedding({ SHED_AFTER_FAILURES: '0' })
    await h.setOriginMode({ kind: 'delay', ms: 400 })
    for (let i = 0; i < 4; i++) {
      expect((await timed(h, slackDelivery())).decision).toBe('forwarded')
    }
    expect(spool.sent).toEqual([])
  })
})
