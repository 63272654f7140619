/**
 * What the origin refuses, and that a refusal writes nothing: unsigned, wrongly signed, stale or
 * future requests (401, one opaque answer for all), bodies that are not valid events (400), and
 * bodies over the limit (413). Secret rotation: every configured secret verifies.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import {
  ANSWER_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  signForward,
  verifyAnswer,
} from '../../contract/forward-signature'
import { hmac, toHex } from '../../shared/crypto'
import { fileTestbed } from '../support/for-file'
import { eventFixture, signedPost } from '../support/origin'

const NEW_SECRET = `new-${randomBytes(8).toString('hex')}`
const OLD_SECRET = `old-${randomBytes(8).toString('hex')}`
const MAX_EVENT_BYTES = 4096

const bed = fileTestbed({
  secret: `${NEW_SECRET},${OLD_SECRET}`,
  config: { maxEventBytes: MAX_EVENT_BYTES },
})

const TABLES = ['customers', 'conversations', 'messages', 'outbox']

async function rowsWritten(): Promise<number> {
  const counts = await Promise.all(TABLES.map((t) => bed.count(t)))
  return counts.reduce((a, b) => a + b, 0)
}

function post(body: string | ReadableStream<Uint8Array>, headers: Record<string, string>) {
  return fetch(`${bed.origin.url}/v1/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
    // Needed by fetch for a streamed (chunked) request body.
    duplex: 'half',
    signal: AbortSignal.timeout(30_000),
  } as RequestInit)
}

const now = () => Math.floor(Date.now() / 1000)

describe('authentication', () => {
  const cases: [string, (body: string) => Promise<Record<string, string>>][] = [
    ['no signature headers', async () => ({})],
    [
      'a signature without a timestamp',
      async (body) => {
        const { 'x-dedup-signature': signature } = await signForward(NEW_SECRET, body)
        return { 'x-dedup-signature': signature as string }
      },
    ],
    ['a signature under an unknown secret', (body) => signForward('not-a-configured-secret', body)],
    ['a signature over another body', (body) => signForward(NEW_SECRET, `${body} `)],
    [
      'a malformed signature header',
      async (body) => ({
        ...(await signForward(NEW_SECRET, body)),
        'x-dedup-signature': 'sha256=deadbeef',
      }),
    ],
    [
      'a stale timestamp (over 5 minutes old)',
      (body) => signForward(NEW_SECRET, body, now() - 301),
    ],
    [
      'a timestamp over 5 minutes in the future',
      (body) => signForward(NEW_SECRET, body, now() + 301),
    ],
  ]

  it.each(cases)('%s: 401, opaque, nothing written', async (_name, headersFor) => {
    const body = JSON.stringify(await eventFixture())
    const res = await post(body, await headersFor(body))
    expect(res.status).toBe(401)
    expect(await res.json()).toEqual({
      error: { code: 'unauthorized', message: 'missing or invalid request signature' },
    })
    expect(await rowsWritten()).toBe(0)
  })
})

describe('the signature binds method and route (scheme v2)', () => {
  const cases: [string, (body: string) => Promise<Record<string, string>>][] = [
    [
      'a signature made for /v1/failures/inbound',
      (body) =>
        signForward(NEW_SECRET, body, now(), { method: 'POST', path: '/v1/failures/inbound' }),
    ],
    [
      'a signature made for another method (PUT)',
      (body) => signForward(NEW_SECRET, body, now(), { method: 'PUT', path: '/v1/events' }),
    ],
    [
      'a v1 signature (time and body only)',
      async (body) => {
        const timestamp = String(now())
        const mac = toHex(await hmac(NEW_SECRET, 'SHA-256', `${timestamp}.${body}`))
        return { 'x-dedup-timestamp': timestamp, 'x-dedup-signature': `v1=${mac}` }
      },
    ],
  ]

  it.each(cases)('%s, sent to POST /v1/events: 401, nothing written', async (_name, headersFor) => {
    const body = JSON.stringify(await eventFixture())
    const res = await post(body, await headersFor(body))
    expect(res.status).toBe(401)
    expect(await rowsWritten()).toBe(0)
  })
})

describe('validation', () => {
  const cases: [string, () => Promise<string>, RegExp][] = [
    ['a body that is not JSON', async () => '{"kind": "message",', /not JSON/],
    ['a JSON array', async () => '[]', /invalid event/],
    [
      // Any name of the safe form is a channel (names are data); others are refused.
      'a channel name not of the safe form',
      async () => JSON.stringify({ ...(await eventFixture()), channel: 'Fax; DROP' }),
      /channel/,
    ],
    [
      'an unknown kind',
      async () => JSON.stringify({ ...(await eventFixture()), kind: 'reaction' }),
      /kind/,
    ],
    [
      'a missing message key',
      async () => {
        const { messageKey: _dropped, ...rest } = await eventFixture()
        return JSON.stringify(rest)
      },
      /messageKey/,
    ],
    [
      'an unexpected field',
      async () => JSON.stringify({ ...(await eventFixture()), extra: 1 }),
      /extra/,
    ],
    [
      'another schema version',
      async () => JSON.stringify({ ...(await eventFixture()), v: 2 }),
      /\bv\b/,
    ],
    [
      'a bad payload hash',
      async () => JSON.stringify({ ...(await eventFixture()), payloadHash: 'XYZ' }),
      /payloadHash/,
    ],
  ]

  it.each(cases)(
    '%s: 400 with a message naming the problem, nothing written',
    async (_name, bodyOf, message) => {
      const body = await bodyOf()
      const res = await post(body, await signForward(NEW_SECRET, body))
      expect(res.status).toBe(400)
      const answer = (await res.json()) as { error: { code: string; message: string } }
      expect(answer.error.code).toBe('invalid_event')
      expect(answer.error.message).toMatch(message)
      expect(await rowsWritten()).toBe(0)
    },
  )
})

describe('body size', () => {
  it('a body over MAX_EVENT_BYTES by Content-Length: 413 before verification', async () => {
    const event = await eventFixture({ body: 'x'.repeat(MAX_EVENT_BYTES) })
    const res = await signedPost(bed.origin.url, event, NEW_SECRET)
    expect(res.status).toBe(413)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('body_too_large')
    expect(await rowsWritten()).toBe(0)
  })

  it('a chunked body over MAX_EVENT_BYTES (no Content-Length): 413', async () => {
    const chunk = new TextEncoder().encode('x'.repeat(1024))
    let sent = 0
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= MAX_EVENT_BYTES * 2) return controller.close()
        sent += chunk.length
        controller.enqueue(chunk)
      },
    })
    const res = await post(stream, await signForward(NEW_SECRET, 'unused'))
    expect(res.status).toBe(413)
    expect(await rowsWritten()).toBe(0)
  })

  it('a chunked body within MAX_EVENT_BYTES is read whole and verified: 201', async () => {
    const body = JSON.stringify(await eventFixture())
    const bytes = new TextEncoder().encode(body)
    const half = Math.floor(bytes.length / 2)
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, half))
        controller.enqueue(bytes.slice(half))
        controller.close()
      },
    })
    const res = await post(stream, await signForward(NEW_SECRET, body))
    expect(res.status).toBe(201)
    expect(await bed.count('messages')).toBe(1)
  })
})

describe('secret rotation', () => {
  it.each([
    ['the new secret', NEW_SECRET],
    ['the old secret, still configured', OLD_SECRET],
  ])('a request signed with %s is accepted', async (_name, secret) => {
    const res = await signedPost(bed.origin.url, await eventFixture(), secret)
    expect(res.status).toBe(201)
  })
})

// Last: these write rows, and the tests above count none.
describe('the answer signature', () => {
  it.each([
    ['the new secret', NEW_SECRET],
    ['the old secret, still configured', OLD_SECRET],
  ])(
    'a 201 to a request signed with %s is signed for that request, status and body',
    async (_name, secret) => {
      const body = JSON.stringify(await eventFixture())
      const headers = await signForward(secret, body)
      const res = await post(body, headers)
      const text = await res.text()
      const signature = res.headers.get(ANSWER_SIGNATURE_HEADER)
      const requestSignature = headers[SIGNATURE_HEADER] as string
      expect(res.status).toBe(201)
      expect(await verifyAnswer([secret], requestSignature, 201, text, signature)).toBe(true)
      // Bound to its status, its bytes and its request.
      expect(await verifyAnswer([secret], requestSignature, 200, text, signature)).toBe(false)
      expect(await verifyAnswer([secret], requestSignature, 201, `${text} `, signature)).toBe(false)
      const other = (await signForward(secret, `${body} `))[SIGNATURE_HEADER] as string
      expect(await verifyAnswer([secret], other, 201, text, signature)).toBe(false)
    },
  )

  it('an error after verification (400) is signed; a refused signature (401) gets none', async () => {
    const invalid = '[]'
    const headers = await signForward(NEW_SECRET, invalid)
    const refused = await post(invalid, headers)
    expect(refused.status).toBe(400)
    const text = await refused.text()
    const signature = refused.headers.get(ANSWER_SIGNATURE_HEADER)
    expect(
      await verifyAnswer([NEW_SECRET], headers[SIGNATURE_HEADER] as string, 400, text, signature),
    ).toBe(true)

    const unsigned = await post(invalid, await signForward('not-a-configured-secret', invalid))
    expect(unsigned.status).toBe(401)
    expect(unsigned.headers.get(ANSWER_SIGNATURE_HEADER)).toBeNull()
  })
})
