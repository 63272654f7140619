/**
 * The one place raw RFC 822 bytes become an email event. The Cloudflare Email Worker and the
 * Gmail poller both call {@link parseEmail} on the bytes they received, so the same email gets the
 * same keys and the same payload hash whichever way (and however often) it arrives.
 *
 * Keys (README's key table):
 * - mailbox: the receiving mailbox, lowercased (Cloudflare: the envelope RCPT TO; Gmail:
 *   GMAIL_MAILBOX). The same Message-ID delivered to two of our inboxes (Cc, a list and a direct
 *   copy) is two messages, one per inbox: two support inboxes are two tenants, each must see it.
 * - sender: `from-sha256-` + 32 hex of the header From address, lowercased. A Message-ID is
 *   chosen by whoever sends the mail, so without the sender anyone could reuse another sender's
 *   id and have that sender's mail answered as a duplicate. The header From is what both paths
 *   share (the envelope MAIL FROM differs between them, and Gmail has none). Hashed: fixed length,
 *   no `:` (so a key splits one way only), and no address in Redis keys or log lines.
 * - id: the Message-ID, normalised (trimmed, angle brackets stripped, right-hand side lowercased;
 *   RFC 5322: the brackets are not part of the id, and domains are case-insensitive). Without a
 *   Message-ID (real senders do this): `content-sha256:` + a hash of from | to | date | subject |
 *   body text, so a redelivered copy, whatever trace headers were added on the way, still matches.
 * - messageKey `{mailbox}:{sender}:{id}`; delivery key `dedup:email:{mailbox}:{sender}:{id}`.
 *   Rows stored before the sender was part of the key hold `{mailbox}:{id}`:
 *   {@link otherEmailKeyForm}.
 * - references: the ids of In-Reply-To / References under the *replying* sender's scope, so a
 *   reply can only name (and thread into) mail of the same sender in the same mailbox.
 *
 * Every field is bounded to the contract's LIMITS, and nothing depends on when or how the email
 * was received: `occurredAt` is the Date header, or the Unix epoch when that is missing or
 * invalid, never the receive time (the two paths would hash differently).
 * @module
 */
import PostalMime, { type Address, type Email } from 'postal-mime'
import { sha256Hex, utf8 } from './crypto'
import { type DeliveryKey, formatDeliveryKey } from './delivery-key'
import { finalizeEvent, type InboundEventDraft, LIMITS, parseInboundEvent } from './event'

/** Cloudflare Email Routing's limit ("does not support messages bigger than 25 MiB"). */
export const MAX_EMAIL_BYTES = 25 * 1024 * 1024

/**
 * Longer ids are replaced by their hash, so `dedup:email:{mailbox}:{sender}:{id}` fits LIMITS.key:
 * 12 + 254 + 1 + 44 + 1 + 200 = 512.
 */
const MAX_ID_CHARS = 200
/** `from-sha256-` + 32 hex: the sender part of every email key. */
const SENDER_PART = /^from-sha256-[0-9a-f]{32}$/
/** RFC 5321's limit on a forward path; longer is no address of ours. */
const MAX_MAILBOX_CHARS = 254

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

/**
 * Redis key material of an email: namespace `email`, scope `{mailbox}:{sender}` (the receiving
 * mailbox and the From address's hash), id the normalised Message-ID (or `content-sha256:…` /
 * `msgid-sha256:…`), `fallback` when the Message-ID was missing and the content hash stands in.
 */
export type EmailKey = DeliveryKey & { namespace: 'email'; fallback: boolean }

export interface ParsedEmail {
  key: EmailKey
  /** Channel `email`, kind `message`, `deliveryKey` = `dedup:email:{mailbox}:{sender}:{id}`. */
  draft: InboundEventDraft
}

export interface ParseEmailOptions {
  /** The address the email was delivered to (envelope RCPT TO, or the polled Gmail mailbox). */
  mailbox: string
}

/** Parses one raw message. @throws {EmailParseError} when the email itself can never be taken. */
export async function parseEmail(
  raw: string | Uint8Array | ArrayBuffer,
  options: ParseEmailOptions,
): Promise<ParsedEmail> {
  const mailbox = normalizeMailbox(options.mailbox)
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
  const subject = bounded(clean(email.subject ?? '').trim(), LIMITS.subject) || undefined
  const occurredAt = isoDate(email.date) ?? UNKNOWN_DATE
  const messageId = email.messageId === undefined ? null : normalizeMessageId(email.messageId)
  const id =
    messageId !== null
      ? await boundedId(messageId)
      : `content-sha256:${await contentHash(email, senderAddress, occurredAt, body)}`
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
  }
  // Our own bounds should make this impossible; if not, the email cannot be stored as it is.
  const check = parseInboundEvent(await finalizeEvent(draft))
  if (!check.ok) throw new EmailParseError('unparseable', check.message)
  return { key, draft }
}

/**
 * The sender part of email keys: `from-sha256-` + 32 hex of the normalised From address (what
 * `sender.externalId` holds).
 */
export async function emailSenderKeyPart(address: string): Promise<string> {
  return `from-sha256-${(await sha256Hex(address)).slice(0, 32)}`
}

/**
 * The other form of an email key across the upgrade that added the sender, for rows and events
 * of either side of it: `{mailbox}:{sender}:{id}` → `{mailbox}:{id}` (how it was stored before),
 * and `{mailbox}:{id}` (from a Worker still on the old code) → `{mailbox}:{senderPart}:{id}`,
 * `senderPart` being that of the mail at hand. Null when `key` is no email key of `mailbox`. The
 * sender part never contains `:`, so a key splits one way only; the caller still requires the
 * row it finds to be the same sender's.
 */
export function otherEmailKeyForm(key: string, mailbox: string, senderPart: string): string | null {
  const prefix = `${mailbox}:`
  if (!key.startsWith(prefix)) return null
  const rest = key.slice(prefix.length)
  const colon = rest.indexOf(':')
  if (colon >= 0 && SENDER_PART.test(rest.slice(0, colon))) {
    return `${prefix}${rest.slice(colon + 1)}`
  }
  return `${prefix}${senderPart}:${rest}`
}

/** Lowercased bare address (`<A@B>` → `a@b`), or null when it is not one. */
export function normalizeMailbox(value: string): string | null {
  return normalizeAddress(value.trim().replace(/^<(.*)>$/, '$1'))
}

function normalizeAddress(value: string): string | null {
  const address = value.trim().toLowerCase()
  if (address.length > MAX_MAILBOX_CHARS || !/^[^\s@<>]+@[^\s@<>]+$/.test(address)) return null
  return address
}

/**
 * RFC 5322 msg-id → key material: the first `<…>` (else the whole value), control characters and
 * whitespace removed, the right-hand side (a domain) lowercased, the left-hand side kept as is
 * (it is case-sensitive). Null when nothing is left.
 */
export function normalizeMessageId(value: string): string | null {
  const trimmed = value.trim()
  const bracketed = /<([^<>]*)>/.exec(trimmed)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
  const id = (bracketed ? (bracketed[1] ?? '') : trimmed).replace(/[\s<>\u0000-\u001f\u007f]/g, '')
  if (id === '') return null
  const at = id.lastIndexOf('@')
  return at < 0 ? id : `${id.slice(0, at)}@${id.slice(at + 1).toLowerCase()}`
}

/** Message-IDs named in a header (`<a@b> <c@d>`; bare tokens when no brackets are used). */
export function messageIdsIn(header: string | undefined): string[] {
  if (!header) return []
  const bracketed = [...header.matchAll(/<([^<>]*)>/g)].map((m) => m[1] ?? '')
  const tokens = bracketed.length > 0 ? bracketed : header.split(/[\s,]+/)
  return tokens.map(normalizeMessageId).filter((id): id is string => id !== null)
}

/** A very long id is hashed: keys stay within LIMITS.key, and both paths hash alike. */
async function boundedId(messageId: string): Promise<string> {
  if (messageId.length <= MAX_ID_CHARS) return messageId
  return `msgid-sha256:${(await sha256Hex(messageId)).slice(0, 32)}`
}

/**
 * In-Reply-To first (the parent), then References from last to first (RFC 5322 lists them
 * oldest first), each scoped like our own key (`{mailbox}:{sender}`: the replying sender's own
 * mail only), without repeats or ourselves, at most LIMITS.references of them: the origin joins
 * the conversation of the nearest one it holds.
 */
async function referenceKeys(email: Email, scope: string, own: string): Promise<string[]> {
  const ids = [...messageIdsIn(email.inReplyTo), ...messageIdsIn(email.references).reverse()]
  const keys: string[] = []
  for (const id of ids) {
    const key = `${scope}:${await boundedId(id)}`
    if (key !== own && !keys.includes(key)) keys.push(key)
    if (keys.length === LIMITS.references) break
  }
  return keys
}

/**
 * Fallback id: what a person would call "the same email". Only header fields a relay does not
 * rewrite, and the decoded text (not the raw bytes: Gmail's copy carries other trace headers and
 * may re-encode the MIME parts). JSON, not `|`-joined, so no field can run into the next.
 */
async function contentHash(
  email: Email,
  from: string,
  occurredAt: string,
  body: string,
): Promise<string> {
  const to = (email.to ?? [])
    .flatMap(mailboxesOf)
    .map((m) => normalizeAddress(m.address) ?? '')
    .sort()
  const date = occurredAt === UNKNOWN_DATE ? clean(email.date ?? '').trim() : occurredAt
  const material = JSON.stringify(['v1', from, to, date, clean(email.subject ?? '').trim(), body])
  return (await sha256Hex(material)).slice(0, 32)
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

/** The text part, else the HTML part as text; line ends unified, trailing space dropped. */
function bodyText(email: Email): string {
  const text = email.text ?? (email.html ? htmlToText(email.html) : '')
  return clean(text.replace(/\r\n?/g, '\n')).trimEnd()
}

/**
 * Enough HTML-to-text for a conversation view (postal-mime renders text only when a text part
 * exists): drop scripts, styles and comments, break lines at block ends, drop tags, decode the
 * common entities.
 */
export function htmlToText(html: string): string {
  return decodeEntities(
    html
      .replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, '')
      .replace(/<!--[\s\S]*?-->/g, '')
      .replace(/<br\s*\/?>/gi, '\n')
      .replace(/<\/(p|div|li|tr|h[1-6]|blockquote|pre|table)\s*>/gi, '\n')
      .replace(/<[^>]*>/g, ''),
  )
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
}

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
}

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,6});/gi, (entity, name: string) => {
    if (name[0] !== '#') return NAMED_ENTITIES[name.toLowerCase()] ?? entity
    const code =
      name[1] === 'x' || name[1] === 'X'
        ? Number.parseInt(name.slice(2), 16)
        : Number(name.slice(1))
    // Surrogate code points are not characters: decoding one would leave a lone surrogate that
    // JSON inflates to six bytes. Leave such an entity as written.
    const surrogate = code >= 0xd800 && code <= 0xdfff
    return code > 0 && code <= 0x10ffff && !surrogate ? String.fromCodePoint(code) : entity
  })
}

/** Postgres text cannot hold NUL, and other C0 controls are noise; tab and newline stay. */
function clean(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, '')
}

/** At most `max` UTF-16 units (what the schema counts), never splitting a surrogate pair. */
function bounded(text: string, max: number): string {
  if (text.length <= max) return text
  const code = text.charCodeAt(max - 1)
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max)
}

function errorName(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 200) : 'parse failed'
}
