/**
 * email/parse.ts (with keys.ts and body-text.ts), the one parser both email paths use:
 * keys, normalisation, the fallback hash, references, bounds and the permanent errors. Pure logic
 * (postal-mime and Web Crypto only).
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { finalizeEvent, jsonBytes, LIMITS, parseInboundEvent } from '../../contract/event'
import { htmlToText } from '../../email/body-text'
import { messageIdsIn, normalizeMessageId } from '../../email/keys'
import { EmailParseError, MAX_EMAIL_BYTES, parseEmail, UNKNOWN_DATE } from '../../email/parse'
import { rawEmail } from '../../local/vendor-deliveries'
import {
  CLOUDFLARE_TRACE_HEADERS,
  GMAIL_TRACE_HEADERS,
  rawEmailWithAttachments,
  senderKeyPart,
} from './support/emails'

const mailbox = 'support@inbound.example'
const ada = senderKeyPart()

async function parse(raw: string, box = mailbox) {
  return parseEmail(raw, { mailbox: box })
}

async function parseError(raw: string | Uint8Array, box = mailbox): Promise<EmailParseError> {
  const error = await parseEmail(raw, { mailbox: box }).then(
    () => null,
    (err: unknown) => err,
  )
  if (!(error instanceof EmailParseError)) throw new Error(`expected EmailParseError, got ${error}`)
  return error
}

describe('Message-ID normalisation', () => {
  it.each([
    ['<abc@Example.COM>', 'abc@example.com'],
    ['  <abc@example.com>  ', 'abc@example.com'],
    ['abc@EXAMPLE.com', 'abc@example.com'],
    ['<CaseKept.XyZ@Mail.Example>', 'CaseKept.XyZ@mail.example'],
    ['<a@b> (a comment)', 'a@b'],
    ['<left@with@two.AT>', 'left@with@two.at'],
    ['<no-at-sign>', 'no-at-sign'],
    ['<a\u0000b@c>', 'ab@c'],
    ['<>', null],
    ['   ', null],
  ])('%j → %j', (input, expected) => {
    expect(normalizeMessageId(input)).toBe(expected)
  })

  it('reads every id of a References header, bracketed or bare', () => {
    expect(messageIdsIn('<a@X.com>\r\n <b@y.com>  <c@Z>')).toEqual(['a@x.com', 'b@y.com', 'c@z'])
    expect(messageIdsIn('a@x.com b@Y.com')).toEqual(['a@x.com', 'b@y.com'])
    expect(messageIdsIn(undefined)).toEqual([])
  })
})

describe('parseEmail: keys and fields', () => {
  it('keys a message by the receiving mailbox, the From address and the normalised Message-ID', async () => {
    const { key, draft } = await parse(
      rawEmail({ messageId: 'Order.42@Shop.EXAMPLE', from: '"Ada" <Ada@Customer.Example>' }),
      'Support@Inbound.Example',
    )
    expect(key).toEqual({
      namespace: 'email',
      scope: `support@inbound.example:${ada}`,
      id: 'Order.42@shop.example',
      fallback: false,
    })
    expect(draft).toMatchObject({
      kind: 'message',
      channel: 'email',
      tenant: 'support@inbound.example',
      deliveryKey: `dedup:email:support@inbound.example:${ada}:Order.42@shop.example`,
      messageKey: `support@inbound.example:${ada}:Order.42@shop.example`,
      sender: { externalId: 'ada@customer.example', displayName: 'Ada' },
      subject: 'Order 1234 has not arrived',
      occurredAt: '2024-08-27T15:49:44.000Z',
      body: 'Hello, my order has not arrived yet.\nCan you help?',
    })
  })

  it('gives the same email the same key and payload hash whatever relay carried it', async () => {
    const common = { messageId: 'same@relay.example' }
    const viaGmail = await parse(rawEmail({ ...common, traceHeaders: GMAIL_TRACE_HEADERS }))
    const viaCloudflare = await parse(
      rawEmail({ ...common, traceHeaders: CLOUDFLARE_TRACE_HEADERS }),
    )
    expect(viaGmail.draft.messageKey).toBe(viaCloudflare.draft.messageKey)
    expect((await finalizeEvent(viaGmail.draft)).payloadHash).toBe(
      (await finalizeEvent(viaCloudflare.draft)).payloadHash,
    )
  })

  it('uses the same Message-ID in two inboxes as two keys (one per inbox: the Cc choice)', async () => {
    const raw = rawEmail({ messageId: 'cc@customer.example', to: 'a@inbound.example' })
    const first = await parse(raw, 'a@inbound.example')
    const second = await parse(raw, 'b@inbound.example')
    expect(first.draft.messageKey).toBe(`a@inbound.example:${ada}:cc@customer.example`)
    expect(second.draft.messageKey).toBe(`b@inbound.example:${ada}:cc@customer.example`)
    expect(first.draft.tenant).not.toBe(second.draft.tenant)
  })

  it('turns HTML-only mail into text', async () => {
    const { draft } = await parse(
      rawEmail({
        html: '<html><head><style>p{}</style></head><body><p>Hi &amp; hello</p><p>Line&nbsp;2<br>3 &#x263A;</p><script>x()</script></body></html>',
      }),
    )
    expect(draft.body).toBe('Hi & hello\nLine 2\n3 \u263a')
    expect(htmlToText('<div>a</div><!-- c --><div>b</div>')).toBe('a\nb')
  })

  it('falls back to the epoch (never the receive time) without a valid Date', async () => {
    expect((await parse(rawEmail({ date: null }))).draft.occurredAt).toBe(UNKNOWN_DATE)
    expect((await parse(rawEmail({ date: 'not a date' }))).draft.occurredAt).toBe(UNKNOWN_DATE)
  })

  it('lists references nearest first, scoped like message keys, without itself or repeats', async () => {
    const { draft } = await parse(
      rawEmail({
        messageId: 'reply-2@customer.example',
        inReplyTo: 'Parent@Support.Example',
        references: ['root@customer.example', 'parent@support.example', 'reply-2@customer.example'],
      }),
    )
    expect(draft.references).toEqual([
      `${mailbox}:${ada}:Parent@support.example`,
      `${mailbox}:${ada}:parent@support.example`,
      `${mailbox}:${ada}:root@customer.example`,
    ])
  })

  it('bounds body, subject, references and id length to the contract', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => `ref-${i}@customer.example`)
    const longId = `${'x'.repeat(400)}@customer.example`
    const { draft, key } = await parse(
      rawEmail({
        messageId: longId,
        subject: 's'.repeat(5000),
        text: `${'\u{1F600}'.repeat(LIMITS.body)}`,
        references: ids,
      }),
    )
    expect(key.id).toMatch(/^msgid-sha256:[0-9a-f]{32}$/)
    expect(draft.body.length).toBeLessThanOrEqual(LIMITS.body)
    // A cut never leaves half a surrogate pair.
    expect(draft.body.at(-1)).toBe('\ude00')
    expect(draft.subject?.length).toBe(LIMITS.subject)
    expect(draft.references).toHaveLength(LIMITS.references)
    expect(draft.references?.[0]).toBe(`${mailbox}:${ada}:ref-299@customer.example`)
    expect(parseInboundEvent(await finalizeEvent(draft)).ok).toBe(true)
    // The reply to that long id finds it under the same hashed key.
    const reply = await parse(rawEmail({ inReplyTo: longId }))
    expect(reply.draft.references).toEqual([draft.messageKey])
  })

  it('a mail at every bound (CJK text, long References, 50 CJK file names) fits the event bytes', async () => {
    const ids = Array.from(
      { length: 300 },
      (_, i) => `ref-${i}-${'r'.repeat(160)}@customer.example`,
    )
    const files = Array.from({ length: LIMITS.attachments }, (_, n) => ({
      fileName: `${n}-${'中'.repeat(300)}.pdf`,
      mimeType: 'application/pdf',
      content: new Uint8Array([37, 80, 68, 70]),
    }))
    const raw = rawEmailWithAttachments(
      { subject: '中'.repeat(LIMITS.subject), text: '中'.repeat(LIMITS.body), references: ids },
      files,
    )
    const { draft } = await parse(raw)
    const event = await finalizeEvent(draft)
    expect(parseInboundEvent(event).ok).toBe(true)
    expect(jsonBytes(event)).toBeLessThanOrEqual(LIMITS.eventBytes)
    // What goes first is the farthest of the References; the nearest and the text stay.
    expect(draft.references?.[0]).toBe(`${mailbox}:${ada}:${ids.at(-1)}`)
    expect(draft.references?.length).toBeLessThan(LIMITS.references)
    expect(draft.body.length).toBeGreaterThan(LIMITS.body / 2)
  })

  it('drops characters Postgres text cannot hold', async () => {
    const { draft } = await parse(rawEmail({ text: 'nul\u0000here', subject: 'a\u0001b' }))
    expect(draft.body).toBe('nulhere')
    expect(draft.subject).toBe('ab')
  })
})

describe('parseEmail: one sender cannot shadow another', () => {
  const stranger = senderKeyPart('mallory@elsewhere.example')

  it('the same Message-ID from two senders to one mailbox: two delivery keys, two message keys', async () => {
    const messageId = 'predictable-42@customer.example'
    const genuine = await parse(rawEmail({ messageId, from: 'Ada <ada@customer.example>' }))
    const forged = await parse(rawEmail({ messageId, from: 'mallory@elsewhere.example' }))
    expect(forged.draft.deliveryKey).not.toBe(genuine.draft.deliveryKey)
    expect(forged.draft.messageKey).not.toBe(genuine.draft.messageKey)
    expect(forged.draft.messageKey).toBe(`${mailbox}:${stranger}:${messageId}`)
    expect(genuine.draft.messageKey).toBe(`${mailbox}:${ada}:${messageId}`)
  })

  it('the sender part is a fixed-length hash of the lower-cased From address, never the address', async () => {
    const upper = await parse(rawEmail({ from: 'ADA@Customer.EXAMPLE', messageId: 'x@y' }))
    const lower = await parse(rawEmail({ from: 'ada@customer.example', messageId: 'x@y' }))
    expect(upper.draft.messageKey).toBe(lower.draft.messageKey)
    expect(lower.draft.deliveryKey).not.toContain('ada@customer.example')
    // A From address with a colon (quoted local part) cannot make a key that splits another way.
    const odd = await parse(rawEmail({ from: '"a:b"@customer.example', messageId: 'x@y' }))
    expect(odd.key.scope).toMatch(/^support@inbound\.example:from-sha256-[0-9a-f]{32}$/)
  })

  it('the longest mailbox, From address and Message-ID still fit the contract', async () => {
    const longMailbox = `${'m'.repeat(64)}@${'d'.repeat(181)}.example`
    expect(longMailbox).toHaveLength(254)
    const { draft } = await parse(
      rawEmail({
        to: longMailbox,
        from: `${'f'.repeat(64)}@${'e'.repeat(180)}.example`,
        messageId: `${'i'.repeat(180)}@${'j'.repeat(11)}.example`,
      }),
      longMailbox,
    )
    // The worst case is exactly the contract's bound.
    expect(draft.deliveryKey).toHaveLength(LIMITS.key)
    expect(parseInboundEvent(await finalizeEvent(draft)).ok).toBe(true)
  })

  it("a stranger's In-Reply-To names a key of the stranger's own, never the other sender's", async () => {
    const original = await parse(rawEmail({ messageId: 'original@customer.example' }))
    const strangerReply = await parse(
      rawEmail({ from: 'mallory@elsewhere.example', inReplyTo: 'original@customer.example' }),
    )
    const genuineReply = await parse(rawEmail({ inReplyTo: 'original@customer.example' }))
    expect(strangerReply.draft.references).toEqual([
      `${mailbox}:${stranger}:original@customer.example`,
    ])
    expect(strangerReply.draft.references).not.toContain(original.draft.messageKey)
    expect(genuineReply.draft.references).toEqual([original.draft.messageKey])
  })
})

describe('parseEmail: no Message-ID', () => {
  const noId = { messageId: null }

  it('keys by a content hash that a redelivered copy (other trace headers) matches', async () => {
    const first = await parse(rawEmail({ ...noId, traceHeaders: CLOUDFLARE_TRACE_HEADERS }))
    const again = await parse(rawEmail({ ...noId, traceHeaders: GMAIL_TRACE_HEADERS }))
    expect(first.key.fallback).toBe(true)
    expect(first.key.id).toMatch(/^content-sha256:[0-9a-f]{32}$/)
    expect(again.draft.messageKey).toBe(first.draft.messageKey)
  })

  it.each([
    ['the sender', { from: 'other@customer.example' }],
    ['the recipients', { to: 'support@inbound.example, cc@inbound.example' }],
    ['the date', { date: 'Tue, 27 Aug 2024 08:49:45 -0700' }],
    ['the subject', { subject: 'Another subject' }],
    ['the body', { text: 'Different text' }],
  ])('changes with %s', async (_, change) => {
    const base = await parse(rawEmail(noId))
    const changed = await parse(rawEmail({ ...noId, ...change }))
    expect(changed.draft.messageKey).not.toBe(base.draft.messageKey)
  })

  it('is the same for any header case and line-end style (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.boolean(), async (upper, lf) => {
        let raw = rawEmail(noId)
        if (upper) raw = raw.replace(/^(From|To|Subject|Date):/gm, (h) => h.toUpperCase())
        if (lf) raw = raw.replace(/\r\n/g, '\n')
        const base = await parse(rawEmail(noId))
        expect((await parse(raw)).draft.messageKey).toBe(base.draft.messageKey)
      }),
      { numRuns: 8 },
    )
  })
})

describe('parseEmail: permanent errors', () => {
  it('refuses more than 25 MiB before parsing', async () => {
    const error = await parseError(new Uint8Array(MAX_EMAIL_BYTES + 1))
    expect(error.code).toBe('too_large')
  })

  it('refuses an email without a From address', async () => {
    const raw = rawEmail().replace(/^From: .*\r\n/m, '')
    expect((await parseError(raw)).code).toBe('no_sender')
    expect((await parseError('\u0000\u0001 not an email at all')).code).toBe('no_sender')
  })

  it('refuses a header block postal-mime will not parse', async () => {
    const huge = `X-Filler: ${'a'.repeat(3 * 1024 * 1024)}\r\n${rawEmail()}`
    expect((await parseError(huge)).code).toBe('unparseable')
  })

  it('refuses a receiving mailbox that is not an address', async () => {
    expect((await parseError(rawEmail(), 'not an address')).code).toBe('bad_mailbox')
  })
})

describe('parseEmail: hostile content', () => {
  it.each(['0000-06-01T00:00:00Z', 'Thu, 1 Jan 1914 00:00:00 +0000'])(
    'a Date of %s, which Postgres or reason rejects, is an unknown date',
    async (date) => {
      const { draft } = await parse(rawEmail({ date }), 'support@inbound.example')
      expect(draft.occurredAt).toBe(new Date(0).toISOString())
    },
  )

  it('a surrogate numeric entity in HTML stays as written, never a lone surrogate', async () => {
    const { draft } = await parse(
      rawEmail({ html: '<p>a&#xD800;b &#55296; &#x1F600;</p>' }),
      'support@inbound.example',
    )
    expect(draft.body).toContain('a&#xD800;b &#55296; \u{1F600}')
    // encodeURIComponent throws on a lone surrogate.
    expect(() => encodeURIComponent(draft.body)).not.toThrow()
  })
})

describe('finalizeEvent and parseInboundEvent', () => {
  it('strips NUL (which Postgres text cannot hold) before hashing', async () => {
    const { draft } = await parse(rawEmail(), 'support@inbound.example')
    const dirty = await finalizeEvent({
      ...draft,
      body: 'a\u0000b',
      subject: 's\u0000',
      sender: { externalId: draft.sender.externalId, displayName: 'A\u0000da' },
    })
    const clean = await finalizeEvent({
      ...draft,
      body: 'ab',
      subject: 's',
      sender: { externalId: draft.sender.externalId, displayName: 'Ada' },
    })
    expect(dirty).toEqual(clean)
  })

  it('names the invalid field without echoing its value', async () => {
    const { draft } = await parse(rawEmail(), 'support@inbound.example')
    const event = await finalizeEvent(draft)
    const result = parseInboundEvent({ ...event, occurredAt: 'secret-looking-value' })
    expect(result.ok).toBe(false)
    if (!result.ok) {
      expect(result.message).toContain('occurredAt')
      expect(result.message).not.toContain('secret-looking-value')
    }
  })
})

describe('parseEmail: attachments (metadata only)', () => {
  const pdf = new Uint8Array(
    Buffer.from('%PDF-1.7\n%\u00e2\u00e3\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n', 'latin1'),
  )
  const png = new Uint8Array([
    0x89,
    0x50,
    0x4e,
    0x47,
    0x0d,
    0x0a,
    0x1a,
    0x0a,
    ...new Array(300).fill(7),
  ])

  it('a PDF with no text: empty body, the kind, type, decoded size and name; never the bytes', async () => {
    const raw = rawEmailWithAttachments({ subject: 'Scan' }, [
      { fileName: 'scan-0001.pdf', mimeType: 'application/pdf', content: pdf },
    ])
    const { draft } = await parse(raw)
    expect(draft.body).toBe('')
    expect(draft.attachments).toEqual([
      {
        kind: 'document',
        mimeType: 'application/pdf',
        size: pdf.byteLength,
        fileName: 'scan-0001.pdf',
      },
    ])
    const event = JSON.stringify(await finalizeEvent(draft))
    expect(event).not.toContain('%PDF')
    expect(event).not.toContain(Buffer.from(pdf).toString('base64').slice(0, 24))
  })

  it('text and an inline image: the text as body, the image with its Content-ID', async () => {
    const raw = rawEmailWithAttachments({ text: 'Photo of the damage attached.' }, [
      {
        fileName: 'IMG_0042.png',
        mimeType: 'image/png',
        content: png,
        contentId: 'img42@customer.example',
        disposition: 'inline',
      },
      { mimeType: 'application/octet-stream', content: pdf },
    ])
    const { draft } = await parse(raw)
    expect(draft.body).toBe('Photo of the damage attached.')
    expect(draft.attachments).toEqual([
      {
        kind: 'image',
        mediaId: 'img42@customer.example',
        mimeType: 'image/png',
        size: png.byteLength,
        fileName: 'IMG_0042.png',
      },
      { kind: 'file', mimeType: 'application/octet-stream', size: pdf.byteLength },
    ])
    expect(draft.body).not.toContain('PNG')
  })

  it('a text-only mail has no attachments field (its payload hash stays what it was)', async () => {
    expect((await parse(rawEmail())).draft).not.toHaveProperty('attachments')
  })

  it(`keeps the first ${LIMITS.attachments} of 60 attachments, and the mail`, async () => {
    const many = Array.from({ length: 60 }, (_, n) => ({
      fileName: `page-${n}.png`,
      mimeType: 'image/png',
      content: png,
    }))
    const { draft } = await parse(rawEmailWithAttachments({ text: 'all pages' }, many))
    expect(draft.attachments).toHaveLength(LIMITS.attachments)
    expect(draft.attachments?.at(-1)?.fileName).toBe(`page-${LIMITS.attachments - 1}.png`)
    expect(parseInboundEvent(await finalizeEvent(draft)).ok).toBe(true)
  })

  it('without Message-ID, two attachment-only mails with the same headers are two messages', async () => {
    const common = { messageId: null, subject: 'Scan', date: 'Tue, 27 Aug 2024 08:49:44 -0700' }
    const one = await parse(
      rawEmailWithAttachments(common, [
        { fileName: 'a.pdf', mimeType: 'application/pdf', content: pdf },
      ]),
    )
    const two = await parse(
      rawEmailWithAttachments(common, [
        { fileName: 'b.pdf', mimeType: 'application/pdf', content: pdf },
      ]),
    )
    expect(one.draft.messageKey).not.toBe(two.draft.messageKey)
    // ...and the same one via another relay is the same message.
    const again = await parse(
      rawEmailWithAttachments({ ...common, traceHeaders: GMAIL_TRACE_HEADERS }, [
        { fileName: 'a.pdf', mimeType: 'application/pdf', content: pdf },
      ]),
    )
    expect(again.draft.messageKey).toBe(one.draft.messageKey)
    expect((await finalizeEvent(again.draft)).payloadHash).toBe(
      (await finalizeEvent(one.draft)).payloadHash,
    )
  })
})
