/**
 * Batched deliveries in the delivery core (worker/deliver-batch.ts), channel-free, inside workerd
 * against real Redis (the Upstash stand-in) and the test origin: each item claimed, forwarded and
 * queued on its own; the request taken only when every item is; a refused item dead-lettered and
 * taken, so the vendor does not resend the whole batch for it.
 */
import { describe, expect, it } from 'vitest'
import { type InboundEventDraft, parseInboundEvent } from '../../contract/event'
import { randomId } from '../../local/vendor-deliveries'
import { type ChannelDelivery, formatDeliveryKey } from '../../worker/channels/types'
import { settingsFor } from '../../worker/config'
import type { Env } from '../../worker/env'
import { forwardEvent } from '../../worker/forward'
import type { DeadMessage, SpoolMessage } from '../../worker/spool/message'
import { deliverToCore } from '../support/workerd/core'
import { harness } from '../support/workerd/harness'
import { RecordingQueue } from '../support/workerd/queues'

function setup(overrides: Partial<Env> = {}) {
  const spool = new RecordingQueue<SpoolMessage>()
  const dead = new RecordingQueue<DeadMessage>()
  const h = harness({
    SPOOL: spool as unknown as Env['SPOOL'],
    SPOOL_DEAD: dead as unknown as Env['SPOOL_DEAD'],
    ...overrides,
  })
  const run = (items: readonly ChannelDelivery[]) => deliverToCore(h.env, items, 'batch-test')
  return { h, spool, dead, run }
}

const tenant = `T${randomId()}`

const keyOf = (delivery: ChannelDelivery): string =>
  delivery.action === 'ignore' || delivery.action === 'unrecognized'
    ? ''
    : formatDeliveryKey(delivery.key)

/** One message of a batch: its own delivery key and message key. */
function item(id: string, draft: Partial<InboundEventDraft> = {}): ChannelDelivery {
  const key = { namespace: 'batch-test', scope: tenant, id }
  return {
    action: 'forward',
    key,
    draft: {
      kind: 'message',
      channel: 'sms',
      tenant,
      deliveryKey: `dedup:batch-test:${tenant}:${id}`,
      messageKey: `${tenant}:${id}`,
      sender: { externalId: '+15550001' },
      body: `text of ${id}`,
      occurredAt: '2026-12-01T10:00:00.000Z',
      ...draft,
    },
  }
}

describe('batched deliveries in the delivery core', () => {
  it('each item is its own event; replayed, the batch adds nothing', async () => {
    const { h, run } = setup()
    const batch = [item(`a${randomId()}`), item(`b${randomId()}`), item(`c${randomId()}`)]
    const first = await run(batch)
    expect(first.status).toBe(200)
    expect(first.outcomes.map((o) => o.decision)).toEqual(['forwarded', 'forwarded', 'forwarded'])
    const replay = await run(batch)
    expect(replay.status).toBe(200)
    expect(replay.outcomes.map((o) => [o.decision, o.decidedBy])).toEqual([
      ['duplicate', 'redis'],
      ['duplicate', 'redis'],
      ['duplicate', 'redis'],
    ])
    const { calls, rows } = await h.originCalls()
    expect(rows).toBe(3)
    expect(calls).toHaveLength(3)
  })

  it('a batch where one item is already stored forwards only the others', async () => {
    const { h, run } = setup()
    const a = item(`a${randomId()}`)
    const b = item(`b${randomId()}`)
    await run([a])
    const { outcomes } = await run([a, b])
    expect(outcomes.map((o) => o.decision)).toEqual(['duplicate', 'forwarded'])
    const { calls, rows } = await h.originCalls()
    expect(rows).toBe(2)
    expect(calls.map((c) => c.deliveryKey)).toEqual([a, b].map((d) => keyOf(d)))
  })

  it('20 concurrent copies of a two-item batch: two rows, every copy answered', async () => {
    const { h, run } = setup()
    const batch = [item(`a${randomId()}`), item(`b${randomId()}`)]
    const results = await Promise.all(Array.from({ length: 20 }, () => run(batch)))
    // A copy that met an attempt still in flight past its wait asks again (503): never a 200
    // that could hide the first attempt's failure. Every item ends taken by someone.
    expect(results.filter((r) => r.status === 200).length).toBeGreaterThan(0)
    expect((await h.originCalls()).rows).toBe(2)
    const retried = await run(batch)
    expect(retried.status).toBe(200)
    expect((await h.originCalls()).rows).toBe(2)
  })

  it('the origin down: every item queued on its own, the request taken', async () => {
    const { h, spool, run } = setup()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    const batch = [item(`a${randomId()}`), item(`b${randomId()}`)]
    const { outcomes, status } = await run(batch)
    expect(status).toBe(200)
    expect(outcomes.map((o) => o.decision)).toEqual(['spooled', 'spooled'])
    expect(spool.sent.map((m) => m.claimKey).sort()).toEqual(batch.map((d) => keyOf(d)).sort())
  })

  it('one item the origin refuses for good is dead-lettered; the others land; the request is taken', async () => {
    const { h, dead, run } = setup()
    const poisoned = item(`p${randomId()}`)
    const good = item(`g${randomId()}`)
    const poisonedKey = keyOf(poisoned)
    await h.setOriginMode({ kind: 'poison', deliveryKeys: [poisonedKey], status: 422 })
    const { outcomes, status } = await run([poisoned, good])
    expect(status).toBe(200)
    expect(outcomes.map((o) => o.decision)).toEqual(['rejected', 'forwarded'])
    expect(dead.sent.map((m) => m.claimKey)).toEqual([poisonedKey])
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('one item the event schema refuses is dead-lettered, not a 400 for the whole batch', async () => {
    const { h, dead, run } = setup()
    const bad = item(`x${randomId()}`, { occurredAt: 'not a time' })
    const good = item(`g${randomId()}`)
    const { outcomes, status } = await run([bad, good])
    expect(status).toBe(200)
    expect(outcomes.map((o) => [o.decision, o.reason])).toEqual([
      ['rejected', 'invalid_payload'],
      ['forwarded', undefined],
    ])
    expect(dead.sent).toHaveLength(1)
    expect(dead.sent[0]?.dead.error).toMatch(/^invalid event: occurredAt/)
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('an item the schema refuses is kept as a replayable event: cause fixed, replayed, one row', async () => {
    const { h, dead, run } = setup()
    const bad = item(`x${randomId()}`, { occurredAt: 'not a time' })
    expect((await run([bad])).status).toBe(200)
    const [letter] = dead.sent
    // The operator fixes the cause (the refused field), then replays what the dead letter kept:
    // the origin's replay parses the stored event with the same schema and ingests it.
    const fixed = parseInboundEvent({
      ...(letter?.event as object),
      occurredAt: '2026-12-01T10:00:00.000Z',
    })
    if (!fixed.ok) throw new Error(`not replayable: ${fixed.message}`)
    const origin = settingsFor(h.env).origin
    if (!origin) throw new Error('no origin')
    for (let replay = 0; replay < 2; replay++) {
      expect((await forwardEvent(origin, fixed.event, 5_000)).kind).toBe('accepted')
    }
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('an item the schema refuses whose dead letter cannot be sent makes the vendor resend', async () => {
    const { h, run } = setup({ SPOOL_DEAD: undefined })
    const bad = item(`x${randomId()}`, { occurredAt: 'not a time' })
    const good = item(`g${randomId()}`)
    const { outcomes, status } = await run([bad, good])
    expect(outcomes.map((o) => [o.decision, o.reason])).toEqual([
      ['retry', 'refused_event_not_recorded'],
      ['forwarded', undefined],
    ])
    expect(status).toBe(503)
    expect((await h.originCalls()).rows).toBe(1)
  })

  it('one item not taken (in flight elsewhere) makes the vendor resend; the resend adds only it', async () => {
    const { h, run } = setup()
    const a = item(`a${randomId()}`)
    const b = item(`b${randomId()}`)
    const bKey = keyOf(b)
    // Another attempt holds b's claim (a lease that outlives this request's wait).
    await h.redis.set(h.redisKey(bKey), 'inflight|othertoken|0000000000000000', { px: 3_000 })
    const first = await run([a, b])
    expect(first.outcomes.map((o) => o.decision)).toEqual(['forwarded', 'retry'])
    expect(first.status).toBe(503)
    await h.redis.del(h.redisKey(bKey))
    const resend = await run([a, b])
    expect(resend.outcomes.map((o) => o.decision)).toEqual(['duplicate', 'forwarded'])
    expect(resend.status).toBe(200)
    expect((await h.originCalls()).rows).toBe(2)
  })
})
