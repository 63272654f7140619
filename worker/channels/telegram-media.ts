/**
 * Telegram media and structured content → the event's attachments (vendor-protocols-2 §2.3).
 * A Message carries at most one medium (an `animation` also sets `document`, a `venue` also sets
 * `location`: the more specific one is taken). `mediaId` is the `file_id` (download it with
 * getFile, as the bot: the gateway never does); `content` keeps `file_unique_id` (the same file
 * over time and across bots, which `file_id` is not) and the medium's own small fields.
 * @module
 */
import { boundAttachments } from '../../contract/attachments'
import type { Attachment, AttachmentKind } from '../../contract/event'
import { obj, str } from './types'

/** Message fields holding one file, by the kind each stands for; the first present wins. */
const FILE_FIELDS: ReadonlyArray<readonly [string, AttachmentKind]> = [
  ['animation', 'animation'],
  ['document', 'document'],
  ['video', 'video'],
  ['video_note', 'video'],
  ['voice', 'voice'],
  ['audio', 'audio'],
  ['sticker', 'sticker'],
]

/** Small descriptive fields worth keeping next to the file, where the medium has them. */
const DETAIL_FIELDS = [
  'file_unique_id',
  'width',
  'height',
  'duration',
  'length',
  'performer',
  'title',
  'emoji',
  'set_name',
  'type',
] as const

export function telegramAttachments(message: Record<string, unknown>): Attachment[] | undefined {
  const caption = str(message.caption) ?? undefined
  const found = fileAttachment(message) ?? placeAttachment(message) ?? contactAttachment(message)
  if (!found) return undefined
  // Only media have a caption; it is the message's body too (contract: the caption of media).
  return boundAttachments([{ ...found, caption }])
}

function fileAttachment(message: Record<string, unknown>): Attachment | null {
  const photo = largestPhoto(message.photo)
  if (photo) return media('image', photo)
  for (const [field, kind] of FILE_FIELDS) {
    const file = obj(message[field])
    if (file && str(file.file_id)) return media(kind, file)
  }
  return null
}

function media(kind: AttachmentKind, file: Record<string, unknown>): Attachment {
  return {
    kind,
    mediaId: str(file.file_id) ?? undefined,
    mimeType: str(file.mime_type) ?? undefined,
    size: typeof file.file_size === 'number' ? file.file_size : undefined,
    fileName: str(file.file_name) ?? undefined,
    content: pick(file, DETAIL_FIELDS),
  }
}

/**
 * The largest PhotoSize: Telegram lists several sizes of one photo, in an order the docs do not
 * state, so the one with the most pixels (then bytes) is taken, not the last.
 */
function largestPhoto(value: unknown): Record<string, unknown> | null {
  if (!Array.isArray(value)) return null
  let best: Record<string, unknown> | null = null
  for (const size of value.map(obj)) {
    if (!size || !str(size.file_id)) continue
    if (!best || area(size) > area(best)) best = size
  }
  return best
}

function area(size: Record<string, unknown>): number {
  const pixels = Number(size.width) * Number(size.height)
  const bytes = Number(size.file_size)
  return (Number.isFinite(pixels) ? pixels : 0) * 2 ** 20 + (Number.isFinite(bytes) ? bytes : 0)
}

/** A venue (a named place, which also sets `location`), else a bare location. */
function placeAttachment(message: Record<string, unknown>): Attachment | null {
  const venue = obj(message.venue)
  const location = obj(venue?.location) ?? obj(message.location)
  if (!location) return null
  const place = pick(location, ['latitude', 'longitude', 'horizontal_accuracy', 'live_period'])
  const named = venue ? pick(venue, ['title', 'address', 'foursquare_id', 'google_place_id']) : {}
  return { kind: 'location', content: { ...place, ...named } }
}

function contactAttachment(message: Record<string, unknown>): Attachment | null {
  const contact = obj(message.contact)
  if (!contact) return null
  const card = pick(contact, ['phone_number', 'first_name', 'last_name', 'user_id', 'vcard'])
  return { kind: 'contacts', content: card }
}

/** The named fields of `from` that are strings or numbers (what a vendor's small fields are). */
function pick(from: Record<string, unknown>, names: readonly string[]): Record<string, unknown> {
  const picked: Record<string, unknown> = {}
  for (const name of names) {
    const value = from[name]
    if (typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value))) {
      picked[name] = value
    }
  }
  return picked
}
