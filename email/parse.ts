/**
 * The one place raw RFC 822 bytes become an email event. The Cloudflare Email Worker and the
 * Gmail poller both call {@link parseEmail} on the bytes they received, so the same email gets the
 * same keys and the same payload hash whichever way (and however often) it arrives.
 *
 * Keys and threading references: email/keys.ts (what each part of a key is and why);
 * the body text: email/body-text.ts; the bounds on every string: shared/text.ts; attachments
 * (metadata, never their bytes): email/attachments.ts.
 *
 * Every field is bounded to the contract's LIMITS, and nothing depends on when or how the email
 * was received: `occurredAt` is the Date header, or the Unix epoch when that is missing or
 * invalid, never the receive time (the two paths would hash differently).
 * @module
 */
import PostalMime, { type Address, type Email } from 'postal-mime'
import { formatDeliveryKey } from '../contract/delivery-key'
import {
  type Attachment,
  finalizeEvent,
  type InboundEventDraft,
  LIMITS,
  parseInboundEvent,
} from '../contract/event'
import { utf8 } from '../shared/crypto'
import { bounded, clean } from '../shared/text'
import { emailAttachments } from './attachments'
import { bodyText } from './body-text'
import { fitToEventBytes } from './event-fit'
import {
  boundedId,
  type ContentMaterial,
  contentHash,
  type EmailKey,
  emailSenderKeyPart,
  normalizeAddress,
  normalizeMessageId,
  referenceKeys,
} from './keys'
import { canonicalMailbox, type MailboxAliases } from './mailbox'

/** Cloudflare Email Routing's limit ("does not support messages bigger than 25 MiB"). */
export const MAX_EMAIL_BYTES = 25 * 1024 * 1024

/** `occurredAt` when the Date header is missing or invalid: stable across paths and retries. */
export const UNKNOWN_DATE = '1970-01-01T00:00:00.000Z'

export type EmailParseErrorCode =
  /** Over {@link MAX_EMAIL_BYTES}. */
  | 'too_large'
  /** postal-mime gave up (header block over 2 MiB, nesting too deep) or the result is unusable. */
  | 'unparseable'
  /** No From address: there is no customer to file it under. */
  | 'no_sender'
  /** The receiving mailbox is not an address (configuration or envelope problem). */
  | 'bad_mailbox'

/** A permanent problem with the email itself: retrying the same bytes can never succeed. */
export class EmailParseError extends Error {
  constructor(
    readonly code: EmailParseErrorCode,
    /** For the log; never contains the body. */
    readonly detail: string,
    options?: ErrorOptions,
  ) {
    super(`${code}: ${detail}`, options)
    this.name = 'EmailParseError'
  }
}

export interface ParsedEmail {
  key: EmailKey
  /** Channel `email`, kind `message`, `deliveryKey` = `dedup:email:{mailbox}:{sender}:{id}`. */
  draft: InboundEventDraft
}

export interface ParseEmailOptions {
  /** The address the email was delivered to (envelope RCPT TO, or the polled Gmail mailbox). */
  mailbox: string
  /**
   * EMAIL_MAILBOX_ALIASES: with the sub-address rule, `mailbox` becomes the inbox that keys and
   * tenant name (email/mailbox.ts), the same for both paths.
   */
  aliases?: MailboxAliases
}

/** Parses one raw message. @throws {EmailParseError} when the email itself can never be taken. */
export async function parseEmail(
  raw: string | Uint8Array | ArrayBuffer,
  options: ParseEmailOptions,
): Promise<ParsedEmail> {
  const mailbox = canonicalMailbox(options.mailbox, options.aliases)
  if (!mailbox) throw new EmailParseError('bad_mailbox', 'the receiving mailbox is not an address')
  const bytes = typeof raw === 'string' ? utf8(raw) : raw
  if (bytes.byteLength > MAX_EMAIL_BYTES) {
    throw new EmailParseError('too_large', `${bytes.byteLength} bytes > ${MAX_EMAIL_BYTES}`)
  }

  let email: Email
  try {
    email = await PostalMime.parse(bytes)
  } catch (err) {
    throw new EmailParseError('unparseable', errorName(err), { cause: err })
  }

  const sender = firstMailbox(email.from) ?? firstMailbox(email.sender)
  const senderAddress = sender ? normalizeAddress(sender.address) : null
  if (!sender || !senderAddress) throw new EmailParseError('no_sender', 'no From address')

  const body = bodyText(email)
  const attachments = emailAttachments(email.attachments)
  const subject = bounded(clean(email.subject ?? '').trim(), LIMITS.subject) || undefined
  const occurredAt = isoDate(email.date) ?? UNKNOWN_DATE
  const messageId = email.messageId === undefined ? null : normalizeMessageId(email.messageId)
  const id =
    messageId !== null
      ? await boundedId(messageId)
      : `content-sha256:${await contentHash(contentMaterial(email, senderAddress, occurredAt, body, attachments))}`
  const scope = `${mailbox}:${await emailSenderKeyPart(senderAddress)}`
  const key: EmailKey = { namespace: 'email', scope, id, fallback: messageId === null }
  const messageKey = `${scope}:${id}`
  const displayName = bounded(clean(sender.name).trim(), LIMITS.name)

  const draft: InboundEventDraft = {
    kind: 'message',
    channel: 'email',
    tenant: mailbox,
    deliveryKey: formatDeliveryKey(key),
    messageKey,
    sender: { externalId: senderAddress, ...(displayName ? { displayName } : {}) },
    body: bounded(body, LIMITS.body),
    occurredAt,
    ...(subject !== undefined ? { subject } : {}),
    references: await referenceKeys(email, scope, messageKey),
    ...(attachments ? { attachments } : {}),
  }
  // Every field is within its bound; all of them together may not be within the event's.
  const fitted = fitToEventBytes(draft)
  // Our own bounds should make this impossible; if not, the email cannot be stored as it is.
  const check = parseInboundEvent(await finalizeEvent(fitted))
  if (!check.ok) throw new EmailParseError('unparseable', check.message)
  return { key, draft: fitted }
}

/** The fields the fallback id hashes (email/keys.ts: {@link contentHash}). */
function contentMaterial(
  email: Email,
  from: string,
  occurredAt: string,
  body: string,
  attachments: readonly Attachment[] | undefined,
): ContentMaterial {
  const to = (email.to ?? [])
    .flatMap(mailboxesOf)
    .map((m) => normalizeAddress(m.address) ?? '')
    .sort()
  const date = occurredAt === UNKNOWN_DATE ? clean(email.date ?? '').trim() : occurredAt
  const subject = clean(email.subject ?? '').trim()
  // Two attachment-only mails with the same headers differ in their files, not their (empty) text.
  const files = attachments?.map((a) => [a.mimeType ?? '', a.size ?? 0, a.fileName ?? ''].join('|'))
  return { from, to, date, subject, body, ...(files ? { attachments: files } : {}) }
}

function mailboxesOf(address: Address): Array<{ name: string; address: string }> {
  return address.group ? address.group : [address]
}

function firstMailbox(address: Address | undefined): { name: string; address: string } | null {
  if (!address) return null
  return mailboxesOf(address)[0] ?? null
}

/** postal-mime gives the Date as ISO when it parses; anything else (or a far-off year) is unknown. */
function isoDate(value: string | undefined): string | null {
  if (!value) return null
  const time = Date.parse(value)
  if (!Number.isFinite(time)) return null
  // Postgres timestamptz starts at 4713 BC but a year-0000 ISO string is out of its range, and no
  // real mail predates 1970 by much: anything outside [1970, 9999] is an unknown date.
  if (time < 0 || time > Date.UTC(9999, 11, 31)) return null
  return new Date(time).toISOString()
}

function errorName(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 200) : 'parse failed'
}
