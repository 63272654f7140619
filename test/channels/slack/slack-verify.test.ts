import { describe, expect, it } from 'vitest'
import {
  partsOf,
  type SlackRequestOptions,
  slackRequest,
  TEST_SECRETS,
} from '../../../local/vendor-deliveries'
import { slackSignature, verifySlack } from '../../../worker/channels/slack'
import { SLACK_DOCS_VECTOR } from '../support/vendor-vectors'

const DOCS = SLACK_DOCS_VECTOR
const URL_ = 'https://gateway.example/webhooks/slack'
const T = 1_700_000_000
const at = (seconds: number) => ({ nowSeconds: () => seconds })

/** An `event_callback` signed at T with the test secret (options on top). */
const signedAt = (options: SlackRequestOptions = {}) =>
  slackRequest(URL_, { type: 'event_callback' }, { timestamp: T, ...options })

/** What the verifier says of `request` at `now`, configured with `secrets`. */
const verdict = async (request: Request, now = T, secrets: string[] = [TEST_SECRETS.slack]) =>
  verifySlack(await partsOf(request), secrets, at(now))

describe('Slack signature', () => {
  it('accepts the documented request at its own time', async () => {
    const request = await slackRequest(URL_, DOCS.body, {
      timestamp: DOCS.timestamp,
      signature: DOCS.signature,
      contentType: 'application/x-www-form-urlencoded',
    })
    expect(await verifySlack(await partsOf(request), [DOCS.secret], at(DOCS.timestamp))).toEqual({
      ok: true,
    })
  })

  it.each(['x-slack-signature', 'x-slack-request-timestamp'])(
    'rejects a request without %s',
    async (header) => {
      const request = await signedAt()
      request.headers.delete(header)
      expect(await verdict(request)).toEqual({ ok: false, reason: 'missing_headers' })
    },
  )

  it('rejects a signature made with another secret', async () => {
    expect(await verdict(await signedAt({ secret: 'other' }))).toEqual({
      ok: false,
      reason: 'signature_mismatch',
    })
  })

  it('accepts the old secret while a rotated list still holds it', async () => {
    const request = await signedAt({ secret: 'old' })
    expect(await verdict(request.clone(), T, ['new', 'old'])).toEqual({ ok: true })
    expect(await verdict(request, T, ['new'])).toMatchObject({ ok: false })
  })

  it.each([
    ['stale', T + 301, 'stale_timestamp'],
    ['future', T - 301, 'future_timestamp'],
  ])('rejects a %s timestamp (more than 5 minutes away)', async (_name, now, reason) => {
    expect(await verdict(await signedAt(), now)).toEqual({ ok: false, reason })
  })

  it.each([T + 300, T - 300])(
    'accepts a timestamp exactly 5 minutes away (now=%i)',
    async (now) => {
      expect(await verdict(await signedAt(), now)).toEqual({ ok: true })
    },
  )

  it('rejects a tampered body', async () => {
    const signed = await slackRequest(URL_, '{"type":"event_callback","n":1}', { timestamp: T })
    const tampered = new Request(signed.url, {
      method: 'POST',
      headers: signed.headers,
      body: '{"type":"event_callback","n":2}',
    })
    expect(await verdict(tampered)).toEqual({ ok: false, reason: 'signature_mismatch' })
  })

  it.each([
    ['a non-numeric timestamp', { 'x-slack-request-timestamp': '17e8' }, 'malformed_timestamp'],
    ['another signature version', { 'x-slack-signature': 'v1=abc' }, 'unknown_signature_version'],
  ])('rejects %s', async (_name, headers, reason) => {
    expect(await verdict(await signedAt({ headers }))).toEqual({ ok: false, reason })
  })

  it('verifies the raw bytes, not a re-encoding of them', async () => {
    // Invalid UTF-8 would change if decoded and re-encoded before hashing.
    const raw = new Uint8Array([0x7b, 0x22, 0x78, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])
    const signature = await slackSignature(TEST_SECRETS.slack, String(T), raw)
    const request = new Request(URL_, {
      method: 'POST',
      headers: { 'x-slack-request-timestamp': String(T), 'x-slack-signature': signature },
      body: raw,
    })
    expect(await verdict(request)).toEqual({ ok: true })
  })
})
