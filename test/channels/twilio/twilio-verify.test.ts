import { describe, expect, it } from 'vitest'
import {
  partsOf,
  TEST_SECRETS,
  twilioParams,
  twilioRequest,
} from '../../../local/vendor-deliveries'
import { sha256Hex } from '../../../shared/crypto'
import {
  MAX_TWILIO_PARAMETERS,
  portVariants,
  signedUrl,
  twilioSignature,
  verifyTwilio,
} from '../../../worker/channels/twilio'
import { TWILIO_BODY_VECTOR, TWILIO_DOCS_TOKEN, twilioCallParams } from '../support/vendor-vectors'

const DOCS_TOKEN = TWILIO_DOCS_TOKEN

describe('Twilio signature (its known answers: vendor-vectors.test.ts)', () => {
  it('sorts names in Unix (case-sensitive) order and repeated values like the SDKs', async () => {
    const url = 'https://x.example/h'
    const a = await twilioSignature('t', url, [
      ['b', '1'],
      ['B', '2'],
      ['a', 'y'],
      ['a', 'x'],
    ])
    const b = await twilioSignature('t', url, [
      ['a', 'x'],
      ['B', '2'],
      ['a', 'y'],
      ['b', '1'],
    ])
    expect(a).toBe(b)
    // Capital letters sort first: "B2" + "ax" + "ay" + "b1".
    const manual = await twilioSignature('t', `${url}B2axayb1`, [])
    expect(a).toBe(manual)
  })
})

describe('Twilio verification', () => {
  const url = 'https://gateway.example/webhooks/twilio'

  it('more form parameters than the bound: refused before a signature is computed, even a good one', async () => {
    const many = (n: number) => [
      ...twilioParams(),
      ...Array.from({ length: n - twilioParams().length }, (_, i): [string, string] => [
        `p${i}`,
        '',
      ]),
    ]
    const signed = async (n: number) =>
      verifyTwilio(await partsOf(await twilioRequest(url, many(n))), [TEST_SECRETS.twilio])
    expect(await signed(MAX_TWILIO_PARAMETERS)).toEqual({ ok: true })
    expect(await signed(MAX_TWILIO_PARAMETERS + 1)).toEqual({
      ok: false,
      reason: 'too_many_parameters',
    })
  })

  it('accepts a signed form request', async () => {
    const request = await twilioRequest(url, twilioParams())
    expect(await verifyTwilio(await partsOf(request), [TEST_SECRETS.twilio])).toEqual({ ok: true })
  })

  it('accepts the documented example posted to its own URL', async () => {
    const request = await twilioRequest(
      'https://example.com/myapp.php?foo=1&bar=2',
      twilioCallParams('+14158675310'),
      { signature: 'L/OH5YylLD5NRKLltdqwSvS0BnU=' },
    )
    expect(await verifyTwilio(await partsOf(request), [DOCS_TOKEN])).toEqual({ ok: true })
  })

  it('rejects a request without X-Twilio-Signature', async () => {
    const request = await twilioRequest(url, twilioParams())
    request.headers.delete('x-twilio-signature')
    expect(await verifyTwilio(await partsOf(request), [TEST_SECRETS.twilio])).toEqual({
      ok: false,
      reason: 'missing_headers',
    })
  })

  it('rejects a signature made with another token', async () => {
    const request = await twilioRequest(url, twilioParams(), { token: 'other' })
    expect(await verifyTwilio(await partsOf(request), [TEST_SECRETS.twilio])).toMatchObject({
      ok: false,
    })
  })

  it('accepts the old token while a rotated list still holds it', async () => {
    const request = await twilioRequest(url, twilioParams(), { token: 'old' })
    const parts = await partsOf(request)
    expect(await verifyTwilio(parts, ['new', 'old'])).toEqual({ ok: true })
    expect(await verifyTwilio(parts, ['new'])).toMatchObject({ ok: false })
  })

  it('rejects a tampered parameter and an added parameter', async () => {
    const signed = await twilioRequest(url, twilioParams({ body: 'hello' }))
    const parts = await partsOf(signed)
    const tampered = {
      ...parts,
      body: { ...parts.body, text: parts.body.text.replace('hello', 'hullo') },
    }
    expect(await verifyTwilio(tampered, [TEST_SECRETS.twilio])).toMatchObject({ ok: false })
    const added = { ...parts, body: { ...parts.body, text: `${parts.body.text}&Extra=1` } }
    expect(await verifyTwilio(added, [TEST_SECRETS.twilio])).toMatchObject({ ok: false })
  })

  it('rejects a signature over another URL', async () => {
    const request = await twilioRequest(url, twilioParams(), {
      signedUrl: 'https://gateway.example/webhooks/other',
    })
    expect(await verifyTwilio(await partsOf(request), [TEST_SECRETS.twilio])).toEqual({
      ok: false,
      reason: 'signature_mismatch',
    })
  })

  it('checks against PUBLIC_BASE_URL + path + query when one is configured', async () => {
    // Behind a proxy the Worker sees an internal URL; Twilio signed the public one.
    const request = await twilioRequest(
      'http://10.0.0.7:8787/webhooks/twilio?x=1',
      twilioParams(),
      {
        signedUrl: 'https://hooks.example.com/webhooks/twilio?x=1',
      },
    )
    const parts = await partsOf(request)
    expect(await verifyTwilio(parts, [TEST_SECRETS.twilio])).toMatchObject({ ok: false })
    expect(
      await verifyTwilio(parts, [TEST_SECRETS.twilio], {
        publicBaseUrl: 'https://hooks.example.com/',
      }),
    ).toEqual({ ok: true })
  })

  it.each([
    [
      'signed with :443, received without a port',
      'https://h.example/p?a=1',
      'https://h.example:443/p?a=1',
    ],
    [
      'signed without a port, received with :8443',
      'https://h.example:8443/p',
      'https://h.example/p',
    ],
    [
      'signed with :8443, received with :8443',
      'https://h.example:8443/p',
      'https://h.example:8443/p',
    ],
    ['http signed with :80, received without', 'http://h.example/p', 'http://h.example:80/p'],
  ])('accepts a signature %s', async (_name, received, signed) => {
    const request = await twilioRequest(received, twilioParams(), { signedUrl: signed })
    expect(await verifyTwilio(await partsOf(request), [TEST_SECRETS.twilio])).toEqual({ ok: true })
  })

  it('lists both port forms of a URL', () => {
    expect(portVariants('https://h.example/p?q=1')).toEqual([
      'https://h.example/p?q=1',
      'https://h.example:443/p?q=1',
    ])
    expect(portVariants('http://h.example:8080/p')).toEqual([
      'http://h.example/p',
      'http://h.example:8080/p',
    ])
    expect(signedUrl('http://10.0.0.7/a/b?c=d', 'https://pub.example')).toBe(
      'https://pub.example/a/b?c=d',
    )
  })

  describe('JSON body (bodySHA256)', () => {
    const body = TWILIO_BODY_VECTOR.body
    const jsonRequest = async (
      requestBody: string,
      hash: string,
      token: string = TEST_SECRETS.twilio,
    ) => {
      const signedAt = `${TWILIO_BODY_VECTOR.url}&bodySHA256=${hash}`
      return new Request(signedAt, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-twilio-signature': await twilioSignature(token, signedAt, []),
        },
        body: requestBody,
      })
    }

    it('accepts the SDK vector request', async () => {
      const request = await jsonRequest(body, await sha256Hex(body), DOCS_TOKEN)
      expect(request.headers.get('x-twilio-signature')).toBe(TWILIO_BODY_VECTOR.signature)
      expect(await verifyTwilio(await partsOf(request), [DOCS_TOKEN])).toEqual({ ok: true })
    })

    it('rejects a body that does not match bodySHA256', async () => {
      const request = await jsonRequest('{"property": "other"}', await sha256Hex(body))
      expect(await verifyTwilio(await partsOf(request), [TEST_SECRETS.twilio])).toEqual({
        ok: false,
        reason: 'body_hash_mismatch',
      })
    })
  })
})
