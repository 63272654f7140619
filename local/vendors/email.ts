/**
 * Email fixtures: raw RFC 5322 messages as they travel over SMTP, and how they reach the Worker's
 * `email()` handler locally.
 * @module
 */
import { randomHex } from './common'

export interface EmailFixture {
  from?: string
  to?: string
  subject?: string
  /** Without angle brackets; null = no Message-ID header. */
  messageId?: string | null
  date?: string | null
  text?: string
  html?: string
  inReplyTo?: string
  references?: string[]
  /** Extra header lines placed on top, like relays add them (Received, ARC, ...). */
  traceHeaders?: string[]
}

/** The address the email fixtures send from unless told otherwise. */
export const CUSTOMER = 'ada@customer.example'
/** The mailbox they are sent to unless told otherwise. */
export const MAILBOX = 'support@inbound.example'

export function uniqueMessageId(domain = 'mail.example.com'): string {
  return `${randomHex(8)}.${Date.now()}@${domain}`
}

/** A raw RFC 5322 message with CRLF line ends, as it travels over SMTP; a unique Message-ID unless told. */
export function rawEmail(fixture: EmailFixture = {}): string {
  const messageId = fixture.messageId === undefined ? uniqueMessageId() : fixture.messageId
  const headers = [
    ...(fixture.traceHeaders ?? []),
    `From: ${fixture.from ?? `"Ada Customer" <${CUSTOMER}>`}`,
    `To: ${fixture.to ?? MAILBOX}`,
    `Subject: ${fixture.subject ?? 'Order 1234 has not arrived'}`,
    ...(fixture.date === null
      ? []
      : [`Date: ${fixture.date ?? 'Tue, 27 Aug 2024 08:49:44 -0700'}`]),
    ...(messageId === null ? [] : [`Message-ID: <${messageId}>`]),
    ...(fixture.inReplyTo ? [`In-Reply-To: <${fixture.inReplyTo}>`] : []),
    ...(fixture.references
      ? [`References: ${fixture.references.map((r) => `<${r}>`).join(' ')}`]
      : []),
    'MIME-Version: 1.0',
  ]
  if (fixture.html !== undefined) {
    headers.push('Content-Type: text/html; charset="utf-8"')
    return `${headers.join('\r\n')}\r\n\r\n${fixture.html}\r\n`
  }
  headers.push('Content-Type: text/plain; charset="utf-8"')
  const text = fixture.text ?? 'Hello, my order has not arrived yet.\r\nCan you help?'
  return `${headers.join('\r\n')}\r\n\r\n${text}\r\n`
}

/**
 * The mail handed to the Worker's `email()` handler through Miniflare's `/cdn-cgi/handler/email`
 * (the runtime's own message object; it needs a Message-ID and a From).
 */
export function emailRequest(base: string, raw: string, envelope: { from: string; to?: string }) {
  const query = new URLSearchParams({ from: envelope.from, to: envelope.to ?? MAILBOX })
  return new Request(`${base}/cdn-cgi/handler/email?${query}`, { method: 'POST', body: raw })
}
