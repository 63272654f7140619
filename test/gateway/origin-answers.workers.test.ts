/**
 * Only the origin's own answer settles an event, in workerd against the test origin: a redirect
 * (an SSO wall's 302 to a login page that answers 200) is never followed, a 200 page from a
 * proxy is not "accepted", and an answer without the origin's answer signature is neither, even
 * when its JSON is the origin's own outcome. What is not accepted is queued, retried, and lands
 * once the path is fixed. And `/healthz` reports whether the origin answers, probed once per
 * cache period, not per hit.
 */
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test'
import { describe, expect, inject, it } from 'vitest'
import { settledValue } from '../../claims'
import { randomId, slackDelivery } from '../../local/vendor-deliveries'
import { HEALTH_CACHE_MS } from '../../worker/health'
import worker from '../../worker/index'
import type { DeadMessage, SpoolMessage } from '../../worker/spool/message'
import { SPOOLED_VALUE } from '../support/claim-values'
import type { OriginMode } from '../support/workerd/fake-origin'
import { GATEWAY, type Harness, harness } from '../support/workerd/harness'
import { withQueues } from '../support/workerd/queues'

const SPOOL = 'inbound-dedup-spool'
const SPOOL_DEAD = 'inbound-dedup-spool-dead'

async function consume(h: Harness, queue: string, body: unknown, attempts = 1) {
  const id = `msg-${randomId()}`
  const batch = createMessageBatch(queue, [{ id, timestamp: new Date(), attempts, body }])
  const ctx = createExecutionContext()
  await worker.queue(batch, h.env, ctx)
  const result = await getQueueResult(batch, ctx)
  return {
    acked: result.explicitAcks.includes(id),
    retried: result.retryMessages.some((m: { msgId: string }) => m.msgId === id),
  }
}

/** Each wall, and why a forward through it failed, as the dead letter and the logs say it. */
const WALLS: [string, OriginMode, string][] = [
  ['a 302 to a login page that answers 200', { kind: 'redirect' }, '302 redirect'],
  ['a proxy answering 200 with its own HTML', { kind: 'html' }, '200 unsigned_answer'],
  // The live attempt stored the row (answered 201, unsigned): the retry's answer is the duplicate's.
  // Its JSON is the origin's own outcome: the shape alone is never taken for the origin's word.
  ['an answer without the origin signature', { kind: 'unsigned' }, '200 unsigned_answer'],
]

describe.each(WALLS)('the origin behind %s', (_name, wall, why) => {
  it('live: not accepted, queued (claim spooled), the redirect not followed; lands once when the path is fixed', async () => {
    const { h, spool } = withQueues()
    await h.setOriginMode(wall)
    const d = slackDelivery()

    expect((await h.send(d)).status).toBe(200)
    expect(spool.sent).toHaveLength(1)
    expect(await h.redisGet(d.deliveryKey)).toMatch(SPOOLED_VALUE)
    expect((await h.originCalls()).logins).toBe(0)

    // Still walled: the consumer retries, does not ack.
    const [message] = spool.sent as [SpoolMessage]
    expect(await consume(h, SPOOL, message)).toEqual({ acked: false, retried: true })
    expect(await h.redisGet(d.deliveryKey)).toMatch(SPOOLED_VALUE)

    // The path is fixed: it lands, once.
    await h.setOriginMode({ kind: 'ok' })
    expect(await consume(h, SPOOL, message)).toEqual({ acked: true, retried: false })
    expect(await consume(h, SPOOL, message)).toEqual({ acked: true, retried: false })
    const seen = await h.originCalls()
    expect(seen.rows).toBe(1)
    expect(seen.logins).toBe(0)
    expect(await h.redisGet(d.deliveryKey)).toBe(
      settledValue('done', message.event.payloadHash ?? ''),
    )
  })

  // For the redirect this also shows that workerd hands back the 3xx itself under 'manual'.
  it(`out of attempts, the dead letter says why: "${why}"`, async () => {
    const { h, spool, dead } = withQueues({ SPOOL_MAX_ATTEMPTS: '2' })
    await h.setOriginMode(wall)
    await h.send(slackDelivery())
    const [message] = spool.sent as [SpoolMessage]
    expect(await consume(h, SPOOL, message, 2)).toEqual({ acked: true, retried: false })
    expect(dead.sent).toEqual([
      expect.objectContaining({ dead: expect.objectContaining({ error: `origin ${why}` }) }),
    ])
  })

  it('the dead-letter report is kept (retried) until the origin itself takes it', async () => {
    const { h, spool } = withQueues()
    await h.setOriginMode({ kind: 'fail', status: 503 })
    await h.send(slackDelivery())
    const [message] = spool.sent as [SpoolMessage]
    const dead: DeadMessage = { ...message, dead: { attempts: 20, error: 'origin 500', at: 1 } }
    await h.setOriginMode(wall)
    expect(await consume(h, SPOOL_DEAD, dead)).toEqual({ acked: false, retried: true })
    await h.setOriginMode({ kind: 'ok' })
    expect(await consume(h, SPOOL_DEAD, dead)).toEqual({ acked: true, retried: false })
  })
})

describe('/healthz and the origin', () => {
  it('an origin that does not answer: unreachable, degraded', async () => {
    const h = harness({ ORIGIN_URL: inject('deadRedisUrl') })
    const body = await (await h.deliver(new Request(`${GATEWAY}/healthz`))).json()
    expect(body).toMatchObject({ status: 'degraded', origin: 'unreachable' })
  })

  it('an origin behind a redirect: unavailable, degraded', async () => {
    const h = harness()
    await h.setOriginMode({ kind: 'redirect' })
    const body = await (await h.deliver(new Request(`${GATEWAY}/healthz`))).json()
    expect(body).toMatchObject({ status: 'degraded', origin: 'unavailable' })
  })

  it(`the origin is probed once per ${HEALTH_CACHE_MS} ms, not per hit`, async () => {
    const h = harness()
    for (let i = 0; i < 50; i++) {
      const body = await (await h.deliver(new Request(`${GATEWAY}/healthz`))).json()
      expect(body).toMatchObject({ status: 'ok', origin: 'ok' })
    }
    expect((await h.originCalls()).healthChecks).toBe(1)
  })
})
