/**
 * Admission control in workerd (worker/admission.ts) with the real Worker, real Redis and the test
 * origin: with MAX_IN_FLIGHT low and requests held in flight by a slow origin, the next request
 * gets its channel's retry answer before anything is claimed, and once the held ones are answered
 * a new one is admitted; a place is given back however a request ends (an error answered, a
 * throw, a body that fails mid-stream); ADMISSION_WAIT_MS lets one wait for a place; /healthz is
 * never bounded; the API answers its own 503.
 */
import { describe, expect, it } from 'vitest'
import { PROBLEM_CONTENT_TYPE } from '../../contract/problem'
import { type SignedDelivery, slackDelivery } from '../../local/vendor-deliveries'
import { sha256Hex } from '../../shared/crypto'
import type { Env } from '../../worker/env'
import { GATEWAY, type Harness, harness, WEBHOOKS } from '../support/workerd/harness'

/** The origin holds each forward this long: the requests before it stay in flight meanwhile. */
const HELD_MS = 600

/** Shedding off: a held forward is waited for, so its request stays in flight. */
function gated(overrides: Partial<Env> = {}): Harness {
  return harness({ MAX_IN_FLIGHT: '2', SHED_AFTER_FAILURES: '0', ...overrides })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function answer(h: Harness, delivery: SignedDelivery) {
  const response = await h.send(delivery)
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    decision: response.headers.get('x-dedup-decision'),
  }
}

/** `n` deliveries sent at once and left in flight (the origin holds them); their answers later. */
async function holdInFlight(h: Harness, n: number) {
  await h.setOriginMode({ kind: 'delay', ms: HELD_MS })
  const held = Array.from({ length: n }, () => answer(h, slackDelivery()))
  // Verified, claimed and waiting on the origin by then.
  await sleep(150)
  return held
}

describe('admission: the in-flight bound', () => {
  it('over the bound: 503 + Retry-After, nothing claimed; admitted again once the held ones are answered', async () => {
    const h = gated()
    const held = await holdInFlight(h, 2)
    const refused = slackDelivery()
    const started = Date.now()
    expect(await answer(h, refused)).toEqual({ status: 503, retryAfter: '1', decision: 'retry' })
    expect(Date.now() - started).toBeLessThan(HELD_MS / 2)
    expect(await h.redisGet(refused.deliveryKey)).toBeNull()

    for (const one of await Promise.all(held)) expect(one).toMatchObject({ status: 200 })
    await h.setOriginMode({ kind: 'ok' })
    // The vendor's retry of the refused one is its first attempt: it is taken.
    expect(await answer(h, refused)).toMatchObject({ status: 200, decision: 'forwarded' })
    const { calls } = await h.originCalls()
    expect(calls).toHaveLength(3)
  })

  it('a place is given back after an error answer, a throw and a body that fails mid-stream', async () => {
    const h = harness({ MAX_IN_FLIGHT: '1', MAX_BODY_BYTES: '2048', SHED_AFTER_FAILURES: '0' })
    const tooLarge = new Request(WEBHOOKS.slack, { method: 'POST', body: 'x'.repeat(4_096) })
    expect((await h.deliver(tooLarge)).status).toBe(413)
    expect((await h.send(slackDelivery({ forged: true }))).status).toBe(401)
    const broken = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error('the client went away'))
      },
    })
    const failing = new Request(WEBHOOKS.slack, { method: 'POST', body: broken })
    expect((await h.deliver(failing)).status).toBe(500)
    await h.setOriginMode({ kind: 'fail', status: 500 })
    // Not taken by the origin: queued (the spool is bound here), answered 200.
    expect(await answer(h, slackDelivery())).toMatchObject({ status: 200, decision: 'spooled' })
    const notConfigured = harness({ MAX_IN_FLIGHT: '1', TELEGRAM_SECRET_TOKEN: '' })
    const telegram = new Request(WEBHOOKS.telegram, { method: 'POST', body: '{}' })
    expect((await notConfigured.deliver(telegram)).status).toBe(503)
    expect((await notConfigured.deliver(telegram)).headers.get('x-dedup-decision')).toBeNull()

    // Had any of them kept its place, this one would be refused.
    await h.setOriginMode({ kind: 'ok' })
    expect(await answer(h, slackDelivery())).toMatchObject({ status: 200, decision: 'forwarded' })
  })

  it('ADMISSION_WAIT_MS: one over the bound waits for a place and is taken', async () => {
    const h = gated({ MAX_IN_FLIGHT: '1', ADMISSION_WAIT_MS: '3000' })
    const [held] = await holdInFlight(h, 1)
    const waiting = slackDelivery()
    const started = Date.now()
    expect(await answer(h, waiting)).toMatchObject({ status: 200, decision: 'forwarded' })
    expect(Date.now() - started).toBeGreaterThanOrEqual(HELD_MS - 200)
    expect(await held).toMatchObject({ status: 200 })
  })

  it('ADMISSION_WAIT_MS shorter than the hold: refused after that wait, nothing claimed', async () => {
    const h = gated({ MAX_IN_FLIGHT: '1', ADMISSION_WAIT_MS: '100' })
    const [held] = await holdInFlight(h, 1)
    const refused = slackDelivery()
    const started = Date.now()
    expect((await answer(h, refused)).status).toBe(503)
    const waited = Date.now() - started
    expect(waited).toBeGreaterThanOrEqual(90)
    expect(waited).toBeLessThan(HELD_MS - 150)
    expect(await h.redisGet(refused.deliveryKey)).toBeNull()
    await held
  })

  it('/healthz is not bounded; MAX_IN_FLIGHT=0 bounds nothing', async () => {
    const h = gated({ MAX_IN_FLIGHT: '1' })
    const [held] = await holdInFlight(h, 1)
    expect((await h.deliver(new Request(`${GATEWAY}/healthz`))).status).toBe(200)
    await held

    const off = gated({ MAX_IN_FLIGHT: '0' })
    const many = await holdInFlight(off, 5)
    for (const one of await Promise.all(many)) expect(one.status).toBe(200)
  })

  it('the API answers its own 503 problem, Retry-After 5', async () => {
    const key = 'admission-test-key'
    const h = gated({
      MAX_IN_FLIGHT: '1',
      API_KEYS: JSON.stringify({ [await sha256Hex(key)]: 'acme' }),
    })
    const [held] = await holdInFlight(h, 1)
    const response = await h.deliver(
      new Request(`${GATEWAY}/v1/messages`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'idempotency-key': `"${crypto.randomUUID()}"`,
        },
        body: JSON.stringify({ customer: { id: 'cust-1' }, text: 'hello' }),
      }),
    )
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('5')
    expect(response.headers.get('content-type')).toBe(PROBLEM_CONTENT_TYPE)
    await held
  })
})
