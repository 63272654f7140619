/**
 * The forward signature's scheme v2 (contract/forward-signature.ts), as pure logic: what a
 * request signature binds (method, route, time, body) and what an answer signature binds (its
 * request, status and body), with rotation. The origin's refusals over HTTP are in
 * test/origin/auth.pg.test.ts; the Worker's use of the answer in
 * test/gateway/origin-answers.workers.test.ts.
 */
import { describe, expect, it } from 'vitest'
import {
  EVENTS_ROUTE,
  type ForwardRoute,
  SIGNATURE_HEADER,
  signAnswer,
  signForward,
  TIMESTAMP_HEADER,
  verifyAnswer,
  verifyForward,
} from '../../contract/forward-signature'
import { hmac, toHex } from '../../shared/crypto'

const SECRET = 'new-secret'
const OLD = 'old-secret'
const NOW = 1_780_000_000
const BODY = '{"v":1}'
const FAILURES: ForwardRoute = { method: 'POST', path: '/v1/failures/inbound' }

async function verdict(headers: Record<string, string>, route: ForwardRoute, body = BODY) {
  const offered = { timestamp: headers[TIMESTAMP_HEADER], signature: headers[SIGNATURE_HEADER] }
  return verifyForward([SECRET, OLD], route, body, offered, NOW)
}

describe('request signature v2', () => {
  it('verifies for its own method, route and body, and names the secret that matched', async () => {
    expect(await verdict(await signForward(SECRET, BODY, NOW), EVENTS_ROUTE)).toEqual({
      ok: true,
      secret: SECRET,
    })
    expect(await verdict(await signForward(OLD, BODY, NOW, FAILURES), FAILURES)).toEqual({
      ok: true,
      secret: OLD,
    })
  })

  it.each([
    ['another route', FAILURES],
    ['another method', { method: 'PUT', path: '/v1/events' }],
  ])('a signature for POST /v1/events is refused for %s', async (_name, route) => {
    const headers = await signForward(SECRET, BODY, NOW, EVENTS_ROUTE)
    expect(await verdict(headers, route)).toEqual({ ok: false, reason: 'bad_signature' })
  })

  it('the method is case-blind (an HTTP method is one token), the route is not', async () => {
    const headers = await signForward(SECRET, BODY, NOW, { method: 'post', path: '/v1/events' })
    expect((await verdict(headers, EVENTS_ROUTE)).ok).toBe(true)
    const upper = await signForward(SECRET, BODY, NOW, { method: 'POST', path: '/V1/events' })
    expect((await verdict(upper, EVENTS_ROUTE)).ok).toBe(false)
  })

  it('signs v2 alone; a MAC of the time and body only (no method, no route) is refused', async () => {
    const headers = await signForward(SECRET, BODY, NOW)
    expect(headers[SIGNATURE_HEADER]).toMatch(/^v2=[0-9a-f]{64}$/)
    const bare = `v1=${toHex(await hmac(SECRET, 'SHA-256', `${NOW}.${BODY}`))}`
    const refused = { ...headers, [SIGNATURE_HEADER]: bare }
    expect(await verdict(refused, EVENTS_ROUTE)).toEqual({ ok: false, reason: 'bad_signature' })
  })
})

describe('answer signature', () => {
  const request = 'v2=aaaa'
  it('verifies for its request, status and body, under any configured secret', async () => {
    const signature = await signAnswer(OLD, request, 201, '{"outcome":"created"}')
    expect(
      await verifyAnswer([SECRET, OLD], request, 201, '{"outcome":"created"}', signature),
    ).toBe(true)
  })

  it.each([
    ['another request', 'v2=bbbb', 201, '{"outcome":"created"}'],
    ['another status', request, 200, '{"outcome":"created"}'],
    ['another body', request, 201, '<html>Sign in</html>'],
  ] as const)('is refused for %s', async (_name, req, status, body) => {
    const signature = await signAnswer(SECRET, request, 201, '{"outcome":"created"}')
    expect(await verifyAnswer([SECRET], req, status, body, signature)).toBe(false)
  })

  it('is refused when missing, or made with a secret not configured', async () => {
    expect(await verifyAnswer([SECRET], request, 201, BODY, null)).toBe(false)
    const foreign = await signAnswer('someone-else', request, 201, BODY)
    expect(await verifyAnswer([SECRET], request, 201, BODY, foreign)).toBe(false)
  })

  it('is no request signature: the same MAC never verifies as one', async () => {
    const headers = await signForward(SECRET, BODY, NOW)
    const asAnswer = await signAnswer(SECRET, headers[SIGNATURE_HEADER] as string, 201, BODY)
    const forged = { ...headers, [SIGNATURE_HEADER]: asAnswer }
    expect((await verdict(forged, EVENTS_ROUTE)).ok).toBe(false)
  })
})
