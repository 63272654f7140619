/**
 * `POST /v1/events/batch`: signed like every route (scheme v2, its own route name), answered
 * signed, one answer per event in order, each what `POST /v1/events` would answer for that event
 * alone; one invalid event never fails the others.
 */
import { createHash, randomBytes } from 'node:crypto'
import { expect, it } from 'vitest'
import {
  EVENTS_ROUTE,
  SIGNATURE_HEADER,
  signForward,
  verifyAnswer,
} from '../../contract/forward-signature'
import { fileTestbed } from '../support/for-file'
import { eventFixture } from '../support/origin'

const bed = fileTestbed()
const BATCH_ROUTE = { method: 'POST', path: '/v1/events/batch' }

async function postBatch(body: string, route = BATCH_ROUTE) {
  const headers = await signForward(bed.secret, body, undefined, route)
  const res = await fetch(`${bed.origin.url}/v1/events/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    signal: AbortSignal.timeout(30_000),
  })
  const text = await res.text()
  const signed = await verifyAnswer(
    [bed.secret],
    headers[SIGNATURE_HEADER] as string,
    res.status,
    text,
    res.headers.get('x-dedup-answer-signature'),
  )
  return { status: res.status, text, signed }
}

it('answers each event of the batch, signed, in order; an invalid one alone is refused', async () => {
  const first = await eventFixture()
  const second = await eventFixture()
  const tooLarge = { ...(await eventFixture()), body: 'x'.repeat(300_000) }
  const events = [first, { ...second, body: 42 }, second, first, tooLarge]
  const answer = await postBatch(JSON.stringify({ events }))
  expect(answer.status).toBe(200)
  expect(answer.signed).toBe(true)
  const { results } = JSON.parse(answer.text) as { results: Array<Record<string, unknown>> }
  expect(results.map((r) => [r.status, r.outcome ?? (r.error as { code: string }).code])).toEqual([
    [201, 'created'],
    [400, 'invalid_event'],
    [201, 'created'],
    [200, 'duplicate'],
    [413, 'body_too_large'],
  ])
  expect(results[3]?.messageId).toBe(results[0]?.messageId)
  expect(
    await bed.count('messages', 'channel_message_id = ANY($1)', [
      [first.messageKey, second.messageKey, tooLarge.messageKey],
    ]),
  ).toBe(2)
})

it('a signature made for /v1/events is refused on the batch route, and nothing is stored', async () => {
  const event = await eventFixture()
  const answer = await postBatch(JSON.stringify({ events: [event] }), EVENTS_ROUTE)
  expect(answer.status).toBe(401)
  expect(await bed.count('messages', 'channel_message_id = $1', [event.messageKey])).toBe(0)
})

it('a body that is no batch is refused whole (400), signed', async () => {
  const answer = await postBatch(JSON.stringify({ events: 'none' }))
  expect(answer.status).toBe(400)
  expect(answer.signed).toBe(true)
})

it('an api event drained in a batch stores its answer with its row, as alone (the client retry is answered)', async () => {
  const sha = (text: string) => createHash('sha256').update(text).digest('hex')
  const key = `k-${randomBytes(6).toString('hex')}`
  const api = await eventFixture({
    channel: 'api',
    tenant: 'acme',
    deliveryKey: `api:acme:${key}`,
    messageKey: `acme:${key}`,
    idempotency: {
      route: 'POST /v1/messages',
      keyHash: sha(key),
      fingerprint: sha(`body of ${key}`),
      ttlSeconds: 86_400,
    },
  })
  const answer = await postBatch(JSON.stringify({ events: [await eventFixture(), api] }))
  const { results } = JSON.parse(answer.text) as { results: Array<Record<string, unknown>> }
  expect(results[1]).toMatchObject({ status: 201, answer: { status: 201, replayed: false } })
  expect(await bed.count('idempotency_keys', 'key_hash = $1', [sha(key)])).toBe(1)
  const again = await postBatch(JSON.stringify({ events: [api] }))
  const [replayed] = (JSON.parse(again.text) as { results: Array<Record<string, unknown>> }).results
  expect(replayed).toMatchObject({ answer: { status: 201, replayed: true } })
  expect(await bed.count('messages', 'channel_message_id = $1', [`acme:${key}`])).toBe(1)
})
