/**
 * Every answer the origin gives a verified forward carries its answer signature, over the exact
 * bytes sent, on each route the Worker calls (one event, a batch, a dead letter, decision counts),
 * for a success and for an error after verification; the signature is bound to its request and
 * status. A request whose signature did not verify gets no answer signature.
 */
import { describe, expect, it } from 'vitest'
import {
  ANSWER_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  signForward,
  verifyAnswer,
} from '../../contract/forward-signature'
import { fileTestbed } from '../support/for-file'
import { eventFixture } from '../support/origin'

const bed = fileTestbed()

async function post(path: string, body: string, secret = bed.secret) {
  const headers = await signForward(secret, body, undefined, { method: 'POST', path })
  const res = await fetch(`${bed.origin.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    signal: AbortSignal.timeout(30_000),
  })
  const text = await res.text()
  const requestSignature = headers[SIGNATURE_HEADER] as string
  const signature = res.headers.get(ANSWER_SIGNATURE_HEADER)
  return {
    status: res.status,
    text,
    signature,
    verifies: (status = res.status, bytes = text, request = requestSignature) =>
      verifyAnswer([bed.secret], request, status, bytes, signature),
  }
}

const decisionBatch = () => ({ id: crypto.randomUUID(), rows: [], keys: [], dropped: 0 })

const ROUTES: Array<[string, string, () => Promise<unknown>, number]> = [
  ['one event', '/v1/events', () => eventFixture(), 201],
  [
    'a batch',
    '/v1/events/batch',
    async () => ({ events: [await eventFixture(), await eventFixture()] }),
    200,
  ],
  [
    'a dead letter',
    '/v1/failures/inbound',
    async () => {
      const event = await eventFixture()
      return {
        channel: event.channel,
        deliveryKey: event.deliveryKey,
        event,
        error: 'origin 500',
        attempts: 3,
      }
    },
    201,
  ],
  ['decision counts', '/v1/decisions', async () => decisionBatch(), 200],
]

describe.each(ROUTES)('%s (POST %s)', (_name, path, bodyOf, okStatus) => {
  it(`its ${okStatus} is signed over its exact bytes, bound to its request and status`, async () => {
    const body = JSON.stringify(await bodyOf())
    const answer = await post(path, body)
    expect(answer.status).toBe(okStatus)
    expect(JSON.parse(answer.text)).toBeTypeOf('object')
    expect(await answer.verifies()).toBe(true)
    expect(await answer.verifies(okStatus === 200 ? 201 : 200)).toBe(false)
    expect(await answer.verifies(answer.status, `${answer.text} `)).toBe(false)
    const other = (await signForward(bed.secret, `${body} `, undefined, { method: 'POST', path }))[
      SIGNATURE_HEADER
    ] as string
    expect(await answer.verifies(answer.status, answer.text, other)).toBe(false)
  })

  it('an error after verification (400) is signed too', async () => {
    const answer = await post(path, '[]')
    expect(answer.status).toBe(400)
    expect(JSON.parse(answer.text)).toMatchObject({ error: { code: 'invalid_event' } })
    expect(await answer.verifies()).toBe(true)
  })

  it('a request signed with another secret: 401, no answer signature', async () => {
    const answer = await post(path, JSON.stringify(await bodyOf()), 'not-a-configured-secret')
    expect(answer.status).toBe(401)
    expect(answer.signature).toBeNull()
  })
})
