/**
 * An email's key material and threading references (docs/keys.md's key table), shared by the parser
 * (email/parse.ts) and the origin:
 *
 * - mailbox: the receiving inbox, canonical (email/mailbox.ts: lower-cased, `+tag` stripped,
 *   aliases mapped; Cloudflare: of the envelope RCPT TO; Gmail: of GMAIL_MAILBOX). The same
 *   Message-ID delivered to two of our inboxes (Cc, a list and a direct copy) is two messages, one
 *   per inbox: two support inboxes are two tenants, each must see it.
 * - sender: `from-sha256-` + 32 hex of the header From address, lowercased. A Message-ID is
 *   chosen by whoever sends the mail, so without the sender anyone could reuse another sender's
 *   id and have that sender's mail answered as a duplicate. The header From is what both paths
 *   share (the envelope MAIL FROM differs between them, and Gmail has none). Hashed: fixed length,
 *   no `:` (so a key splits one way only), and no address in Redis keys or log lines.
 * - id: the Message-ID, normalised (trimmed, angle brackets stripped, right-hand side lowercased;
 *   RFC 5322: the brackets are not part of the id, and domains are case-insensitive). Without a
 *   Message-ID (real senders do this): `content-sha256:` + {@link contentHash}, so a redelivered
 *   copy, whatever trace headers were added on the way, still matches.
 * - messageKey `{mailbox}:{sender}:{id}`; delivery key `dedup:email:{mailbox}:{sender}:{id}`.
 * - references: the ids of In-Reply-To / References under the *replying* sender's scope, so a
 *   reply can only name (and thread into) mail of the same sender in the same mailbox.
 * @module
 */

import type { DeliveryKey } from '../contract/delivery-key'
import { LIMITS } from '../contract/event'
import { sha256Hex } from '../shared/crypto'

/**
 * Longer ids are replaced by their hash, so `dedup:email:{mailbox}:{sender}:{id}` fits LIMITS.key:
 * 12 + 254 + 1 + 44 + 1 + 200 = 512.
 */
const MAX_ID_CHARS = 200
/** RFC 5321's limit on a forward path; longer is no address of ours. */
const MAX_MAILBOX_CHARS = 254

/**
 * Redis key material of an email: namespace `email`, scope `{mailbox}:{sender}` (the receiving
 * mailbox and the From address's hash), id the normalised Message-ID (or `content-sha256:…` /
 * `msgid-sha256:…`), `fallback` when the Message-ID was missing and the content hash stands in.
 */
export type EmailKey = DeliveryKey & { namespace: 'email'; fallback: boolean }

/**
 * The sender part of email keys: `from-sha256-` + 32 hex of the normalised From address (what
 * `sender.externalId` holds).
 */
export async function emailSenderKeyPart(address: string): Promise<string> {
  return `from-sha256-${(await sha256Hex(address)).slice(0, 32)}`
}

/** Lowercased bare address (`<A@B>` → `a@b`), or null when it is not one. */
export function normalizeMailbox(value: string): string | null {
  return normalizeAddress(value.trim().replace(/^<(.*)>$/, '$1'))
}

/** Lowercased address, or null when it is not one (or longer than a forward path may be). */
export function normalizeAddress(value: string): string | null {
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
export async function boundedId(messageId: string): Promise<string> {
  if (messageId.length <= MAX_ID_CHARS) return messageId
  return `msgid-sha256:${(await sha256Hex(messageId)).slice(0, 32)}`
}

/**
 * In-Reply-To first (the parent), then References from last to first (RFC 5322 lists them
 * oldest first), each scoped like our own key (`{mailbox}:{sender}`: the replying sender's own
 * mail only), without repeats or ourselves, at most LIMITS.references of them: the origin joins
 * the conversation of the nearest one it holds.
 */
export async function referenceKeys(
  headers: { inReplyTo?: string | undefined; references?: string | undefined },
  scope: string,
  own: string,
): Promise<string[]> {
  const ids = [...messageIdsIn(headers.inReplyTo), ...messageIdsIn(headers.references).reverse()]
  const keys: string[] = []
  for (const id of ids) {
    const key = `${scope}:${await boundedId(id)}`
    if (key !== own && !keys.includes(key)) keys.push(key)
    if (keys.length === LIMITS.references) break
  }
  return keys
}

/** What a person would call "the same email", as the fallback id hashes it. */
export interface ContentMaterial {
  /** The normalised From address. */
  from: string
  /** The normalised To addresses, sorted. */
  to: string[]
  /** `occurredAt`, or the raw Date header (cleaned) when it did not parse. */
  date: string
  subject: string
  body: string
  /** Each attachment's `type|size|name`, when there are any (the hash of others stays). */
  attachments?: string[]
}

/**
 * Fallback id: only header fields a relay does not rewrite, and the decoded text (not the raw
 * bytes: Gmail's copy carries other trace headers and may re-encode the MIME parts). JSON, not
 * `|`-joined, so no field can run into the next.
 */
export async function contentHash(material: ContentMaterial): Promise<string> {
  const { from, to, date, subject, body, attachments } = material
  const files = attachments?.length ? [attachments] : []
  const json = JSON.stringify(['v1', from, to, date, subject, body, ...files])
  return (await sha256Hex(json)).slice(0, 32)
}
