/**
 * The normalized inbound event: what the Worker forwards and the origin accepts. Defined once here
 * and imported by both, so the two sides can never disagree on its shape.
 * @module
 */
import * as v from 'valibot'
import { sha256Hex } from '../shared/crypto'
import { EventConnectionSchema } from './connection'
import { IdempotencySchema, type StoredAnswer } from './idempotency'
import { SignatureBindingSchema } from './signature-binding'
import { storable } from './storable'
import { isStorableTime } from './storable-time'

/**
 * What an event channel name looks like (`messages.channel`, the label of its metrics): any name
 * of this form, so a new channel needs no list and no migration (the `channel` columns check the
 * same form). The channels that behave differently are named where they do (email's threading and
 * conversations, the receive-time channels below); every other name behaves alike. Each webhook
 * channel declares the names it writes (worker/channels/types.ts `eventChannels`).
 */
export const CHANNEL_NAME = /^[a-z][a-z0-9-]{0,31}$/
export type Channel = string

/**
 * `undelete` restores a deleted message (Teams' undeleteMessage), ordered against the delete it
 * undoes by its time: the later of the two is the message's state.
 */
export const EVENT_KINDS = ['message', 'edit', 'delete', 'undelete'] as const
export type EventKind = (typeof EVENT_KINDS)[number]

/**
 * Upper bounds keep one event's cost bounded whatever a vendor (or attacker) sends. Text fields
 * count UTF-16 units (what a person reads); `eventBytes` and `content` count UTF-8 bytes of JSON,
 * what queues, R2 and the origin's MAX_EVENT_BYTES measure.
 */
export const LIMITS = {
  key: 512,
  /**
   * A tenant's and a sender id's UTF-8 bytes too: the two are one entry of the unique index
   * `customers_identity_key`, and Postgres refuses (54000) an entry over its btree bound of 2,704
   * bytes; 512 characters of three bytes each, twice, would pass it. (Every other key is an index
   * entry alone: 512 characters are at most 1,536 bytes.)
   */
  identityBytes: 1024,
  body: 64 * 1024,
  name: 256,
  subject: 1024,
  references: 100,
  attachments: 50,
  url: 2048,
  /** One attachment's structured content (a location, a contact card), as JSON. */
  content: 16 * 1024,
  /**
   * The whole event as JSON. Below the origin's default MAX_EVENT_BYTES (256 KiB) by 16 KiB, so a
   * dead-letter report (the event, its key and error) is taken too: every event the schema
   * accepts can be forwarded, queued (through R2 when over a queue message) and dead-lettered.
   */
  eventBytes: 240 * 1024,
} as const

/** UTF-8 bytes of a value as JSON: what every byte bound of the contract measures. */
export function jsonBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value)).byteLength
}

/**
 * What an attachment is, across vendors: media (`image` … `sticker`, `file` when the vendor says
 * no more), and structured content that is no file (`location`, `contacts`, in `content`).
 */
export const ATTACHMENT_KINDS = [
  'image',
  'video',
  'audio',
  'voice',
  'document',
  'sticker',
  'animation',
  'file',
  'location',
  'contacts',
] as const
export type AttachmentKind = (typeof ATTACHMENT_KINDS)[number]

const Text = (max: number) => v.pipe(v.string(), v.maxLength(max))

/** JSON of at most LIMITS.content bytes: a vendor's structured content, bounded. */
const Content = v.pipe(
  v.record(v.string(), v.unknown()),
  v.check((value) => jsonBytes(value) <= LIMITS.content, 'content too large'),
)

/**
 * One attachment's metadata. The gateway never fetches media: it keeps what the vendor says (its
 * media id or URL, type, size, name, caption), for the platform to fetch with its own credentials.
 */
export const AttachmentSchema = v.strictObject({
  kind: v.picklist(ATTACHMENT_KINDS),
  /** The vendor's id for the media: Telegram `file_id`, WhatsApp media id, Slack file id. */
  mediaId: v.optional(Text(LIMITS.key)),
  /** Where the vendor serves it (Twilio `MediaUrlN`, Slack `url_private`); needs its auth. */
  url: v.optional(Text(LIMITS.url)),
  mimeType: v.optional(Text(LIMITS.name)),
  /** Bytes, as the vendor reports them. */
  size: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0))),
  fileName: v.optional(Text(LIMITS.subject)),
  caption: v.optional(Text(LIMITS.body)),
  /** `location` / `contacts`: the vendor's fields (latitude, longitude, name, phones...). */
  content: v.optional(Content),
})
export type Attachment = v.InferOutput<typeof AttachmentSchema>

const Key = v.pipe(v.string(), v.minLength(1), v.maxLength(LIMITS.key))
/** A tenant or a sender id: a key, and half of a customer's index entry (LIMITS.identityBytes). */
export const IdentitySchema = v.pipe(Key, v.maxBytes(LIMITS.identityBytes))

/** An RFC 3339 time that Postgres's `timestamptz` takes (contract/storable-time.ts). */
export const StorableTimeSchema = v.pipe(
  v.string(),
  v.isoTimestamp(),
  v.check(isStorableTime, 'not a time Postgres stores (calendar date, year 1-9999, offset ±15:59)'),
)

const EventFields = v.strictObject({
  /** Schema version; bump when a field changes meaning. */
  v: v.literal(1),
  kind: v.picklist(EVENT_KINDS),
  channel: v.pipe(v.string(), v.regex(CHANNEL_NAME)),
  /** Who owns the ids: Slack team, Twilio AccountSid, Telegram bot id, receiving mailbox. */
  tenant: IdentitySchema,
  /** The vendor delivery this came from (Redis key material); for logs and tracing. */
  deliveryKey: Key,
  /** `messages.channel_message_id`: the logical message, already scoped (team/chat/account). */
  messageKey: Key,
  sender: v.strictObject({
    externalId: IdentitySchema,
    displayName: v.optional(v.pipe(v.string(), v.maxLength(LIMITS.name))),
  }),
  /** Message text. Empty for deletes and for media-only messages. */
  body: v.pipe(v.string(), v.maxLength(LIMITS.body)),
  /** When the vendor says the message (or the edit) happened. */
  occurredAt: StorableTimeSchema,
  /**
   * Edits only, optional: orders two edits with the same `occurredAt` (vendor clocks with
   * one-second resolution); the larger wins. A per-tenant sequence such as Telegram's update_id.
   */
  editSeq: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(0))),
  /** Email only: subject line. */
  subject: v.optional(v.pipe(v.string(), v.maxLength(LIMITS.subject))),
  /** Email only: message keys named by In-Reply-To / References, nearest first. */
  references: v.optional(v.pipe(v.array(Key), v.maxLength(LIMITS.references))),
  /**
   * Media and structured content, metadata only (absent: none). The stored row's `body` is the
   * text, or the caption of media-only messages.
   */
  attachments: v.optional(v.pipe(v.array(AttachmentSchema), v.maxLength(LIMITS.attachments))),
  /**
   * `api` only: the request's Idempotency-Key scope and fingerprint; the origin stores the answer
   * under it, in the message's transaction (contract/idempotency.ts).
   */
  idempotency: v.optional(IdempotencySchema),
  /**
   * A plain-mode WeChat push taken while neither Redis nor the origin could bind its one-time
   * signature (worker/signature-once.ts): the origin binds it before it stores the event, and
   * refuses the event (422 `signature_reused`) when the signature is bound to another body. Not
   * part of the payload: outside the hash.
   */
  signatureBinding: v.optional(SignatureBindingSchema),
  /**
   * The registry connection that verified it, and the version the edge held
   * (contract/connection.ts): the origin refuses the event (422 `connection_disabled`) when that
   * connection is disabled or deleted, and records the version as seen at the edge. Absent: a
   * tenant of the variables. Not part of the payload: outside the hash.
   */
  connection: v.optional(EventConnectionSchema),
  /** Short hash of the fields that define the message; same key + other hash = payload mismatch. */
  payloadHash: v.pipe(v.string(), v.regex(/^[0-9a-f]{16,64}$/)),
})

export type InboundEvent = v.InferOutput<typeof EventFields>

/**
 * Every message key starts with its tenant (`{tenant}:…`, docs/keys.md's key table): an event
 * naming a key of another tenant is no event of its tenant, whatever signed it.
 */
const isKeyOfTenant = (event: InboundEvent): boolean =>
  event.messageKey.startsWith(`${event.tenant}:`)

export const InboundEventSchema = v.pipe(
  EventFields,
  v.check((event) => jsonBytes(event) <= LIMITS.eventBytes, 'event too large'),
  v.forward(v.check(isKeyOfTenant, 'message key of another tenant'), ['messageKey']),
)
export type InboundEventDraft = Omit<InboundEvent, 'v' | 'payloadHash'>

/**
 * Channels whose webhooks carry no message time: Twilio sends none, so the gateway's receive time
 * stands in for `occurredAt`, and it differs on every redelivery. It stays out of their hash, or
 * every replay would read as a payload mismatch.
 */
const RECEIVE_TIME_CHANNELS: ReadonlySet<Channel> = new Set(['sms', 'whatsapp', 'api'])

/**
 * The payload hash covers what a user would see (kind, sender, text, subject, time), not the vendor's
 * envelope: a retry with other envelope fields (Slack `X-Slack-Retry-Num`, JSON key order) is the
 * same payload; a different text under the same message key is a mismatch worth an alert.
 */
export async function payloadHashOf(event: InboundEventDraft): Promise<string> {
  const material = JSON.stringify([
    event.kind,
    event.channel,
    event.tenant,
    event.messageKey,
    event.sender.externalId,
    event.body,
    event.subject ?? null,
    RECEIVE_TIME_CHANNELS.has(event.channel) ? null : event.occurredAt,
    // Only when there are some: an empty list and no list hash alike.
    ...(event.attachments?.length ? [attachmentIdentities(event.attachments)] : []),
  ])
  return (await sha256Hex(material)).slice(0, 16)
}

/** What makes an attachment the same one on a redelivery: its kind, id or URL, and caption. */
function attachmentIdentities(attachments: readonly Attachment[]): unknown[] {
  return attachments.map((a) => [a.kind, a.mediaId ?? a.url ?? null, a.caption ?? null])
}

/**
 * The event of a draft: every string storable (contract/storable.ts), so a vendor's NUL or lone
 * surrogate, in any field, never makes Postgres refuse the message; the hash taken over what is
 * stored.
 */
export async function finalizeEvent(draft: InboundEventDraft): Promise<InboundEvent> {
  const clean = storable(draft)
  return { v: 1, ...clean, payloadHash: await payloadHashOf(clean) }
}

export type ParseResult = { ok: true; event: InboundEvent } | { ok: false; message: string }

/**
 * Validates an untrusted value; the message names the offending field, never echoes values. Its
 * strings are made storable first, as {@link finalizeEvent} does: an event made by other code (a
 * Worker of an older version, a queued event, a dead letter replayed) is stored, not refused.
 */
export function parseInboundEvent(input: unknown): ParseResult {
  const result = v.safeParse(InboundEventSchema, storable(input))
  if (result.success) return { ok: true, event: result.output }
  const issue = result.issues[0]
  const path = issue?.path?.map((p) => String(p.key)).join('.') || '(root)'
  // valibot's own messages quote the received value (a sender name, a subject): name the field
  // and what was expected only, so nothing from the event reaches a response or a log line.
  const expected = issue?.expected ? ` (expected ${issue.expected})` : ''
  // A check's message is ours ('event too large'), never a value.
  const what = issue?.type === 'check' ? issue.message : (issue?.type ?? 'invalid')
  return { ok: false, message: `invalid event: ${path}: ${what}${expected}` }
}

/** What the origin answers for an accepted event (new, duplicate, edit applied, ...). */
export type IngestOutcome = 'created' | 'duplicate' | 'updated' | 'ignored'

export interface IngestResult {
  outcome: IngestOutcome
  duplicate: boolean
  messageId: string | null
  conversationId: string | null
  customerId: string | null
  /** Set when the key was known with another payload hash (kept the first). */
  payloadMismatch?: boolean
  /** Events with `idempotency`: the answer stored for their key (the client's answer). */
  answer?: StoredAnswer
}
