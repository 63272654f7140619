/**
 * What the email tests add to the shared email fixtures (local/vendor-deliveries.ts: `rawEmail`,
 * `uniqueMessageId`, `CUSTOMER`): the sender part of email keys computed independently of
 * email/parse.ts, the trace headers two relays add, and multipart mails with attachments.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import { CUSTOMER, type EmailFixture, rawEmail } from '../../../local/vendor-deliveries'

/**
 * The sender part of email keys (`from-sha256-` + 32 hex of the lower-cased From address),
 * computed here independently of email/parse.ts, so the tests pin the format.
 */
export function senderKeyPart(address = CUSTOMER): string {
  return `from-sha256-${createHash('sha256').update(address.toLowerCase()).digest('hex').slice(0, 32)}`
}

/** Trace headers a different relay would add (Gmail's copy carries others than Cloudflare's). */
export const GMAIL_TRACE_HEADERS = [
  'Delivered-To: support@inbound.example',
  'Received: by 2002:a05:6a10:1234 with SMTP id abc123; Tue, 27 Aug 2024 08:49:50 -0700 (PDT)',
  'X-Google-Smtp-Source: AGHT+IEexample',
  'ARC-Seal: i=1; a=rsa-sha256; t=1724773790; cv=none; d=google.com; s=arc-20160816; b=abc',
]
export const CLOUDFLARE_TRACE_HEADERS = [
  'Received: from smtp.customer.example (127.0.0.1) by cloudflare-email.com (unknown) id 4fwwffRXOpyR for <support@inbound.example>; Tue, 27 Aug 2024 15:49:48 +0000',
]

export interface AttachmentFixture {
  fileName?: string
  mimeType: string
  content: Uint8Array
  /** Without angle brackets. */
  contentId?: string
  disposition?: 'attachment' | 'inline'
}

/**
 * A multipart/mixed message: the text part (empty text = no text part at all, a media-only
 * mail) and each attachment base64-encoded in 76-character lines, as mail clients send them.
 */
export function rawEmailWithAttachments(
  fixture: EmailFixture,
  attachments: readonly AttachmentFixture[],
): string {
  const boundary = `b-${randomBytes(6).toString('hex')}`
  const plain = rawEmail({ ...fixture, html: undefined })
  const headers = plain
    .slice(0, plain.indexOf('\r\n\r\n'))
    .replace(/Content-Type: text\/plain; charset="utf-8"$/, '')
    .trimEnd()
  const text = fixture.text ?? ''
  const parts = [
    ...(text ? [`Content-Type: text/plain; charset="utf-8"\r\n\r\n${text}\r\n`] : []),
    ...attachments.map((a) => {
      const name = a.fileName ? `; filename="${a.fileName}"` : ''
      const lines =
        Buffer.from(a.content)
          .toString('base64')
          .match(/.{1,76}/g) ?? []
      return [
        `Content-Type: ${a.mimeType}${a.fileName ? `; name="${a.fileName}"` : ''}`,
        'Content-Transfer-Encoding: base64',
        `Content-Disposition: ${a.disposition ?? 'attachment'}${name}`,
        ...(a.contentId ? [`Content-ID: <${a.contentId}>`] : []),
        '',
        ...lines,
        '',
      ].join('\r\n')
    }),
  ]
  const body = parts.map((part) => `--${boundary}\r\n${part}`).join('')
  return `${headers}\r\nContent-Type: multipart/mixed; boundary="${boundary}"\r\n\r\n${body}--${boundary}--\r\n`
}

/** A small PDF attachment unique to the test, and the metadata a row should hold for it. */
export function scanPdf(fileName = 'scan.pdf') {
  const content = new Uint8Array(Buffer.from(`%PDF-1.7 ${randomBytes(6).toString('hex')}\n%%EOF\n`))
  const mimeType = 'application/pdf'
  return {
    fixture: { fileName, mimeType, content },
    stored: { kind: 'document', mimeType, size: content.byteLength, fileName },
  }
}
