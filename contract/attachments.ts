/**
 * What every channel's media mapping shares: the kind a MIME type stands for, and the bounds an
 * attachment list is cut to before it goes into an event. The channels map their vendor's fields
 * (worker/channels/*-media.ts, email/attachments.ts); this module makes any list they
 * build valid for contract/event.ts, so a vendor's odd media never costs the message itself.
 * @module
 */
import { bounded } from '../shared/text'
import { type Attachment, type AttachmentKind, jsonBytes, LIMITS } from './event'

/**
 * The attachments' JSON an event may carry, all together: metadata adds at most this to an event,
 * so a message with a full text and its media stays within LIMITS.eventBytes. Fifty attachments
 * with ordinary names take about a fifth of it (6.6 KB).
 */
export const ATTACHMENTS_BUDGET_BYTES = 32 * 1024

/** image/…, video/…, audio/… by their family; a bare or unknown type is a `file`, else a `document`. */
export function kindOfMimeType(mimeType: string | null | undefined): AttachmentKind {
  const type = (mimeType ?? '').trim().toLowerCase()
  if (type.startsWith('image/')) return 'image'
  if (type.startsWith('video/')) return 'video'
  if (type.startsWith('audio/')) return 'audio'
  if (type === '' || type === 'application/octet-stream' || !type.includes('/')) return 'file'
  return 'document'
}

/**
 * The list as an event may carry it: empty fields left out, every string cut to its field's bound,
 * a `content` over LIMITS.content dropped (the kind stays), and only the first LIMITS.attachments entries, within
 * {@link ATTACHMENTS_BUDGET_BYTES}. The rest is dropped, never a reason to refuse the message:
 * the text is what matters most, and the platform can still ask the vendor for the full message.
 * `undefined` when nothing is left: an event without media carries no `attachments` field.
 */
export function boundAttachments(list: readonly Attachment[]): Attachment[] | undefined {
  const kept: Attachment[] = []
  let bytes = 2
  for (const attachment of list.slice(0, LIMITS.attachments)) {
    const entry = boundOne(attachment)
    bytes += jsonBytes(entry) + 1
    if (bytes > ATTACHMENTS_BUDGET_BYTES) break
    kept.push(entry)
  }
  return kept.length > 0 ? kept : undefined
}

function boundOne(attachment: Attachment): Attachment {
  const { kind, mediaId, url, mimeType, size, fileName, caption, content } = attachment
  const contentFits =
    content !== undefined && Object.keys(content).length > 0 && jsonBytes(content) <= LIMITS.content
  return {
    kind,
    ...text('mediaId', mediaId, LIMITS.key),
    // A URL cut short is no URL: one over the bound is left out.
    ...(url !== undefined && url.length <= LIMITS.url ? { url } : {}),
    ...text('mimeType', mimeType, LIMITS.name),
    ...(size !== undefined && Number.isSafeInteger(size) && size >= 0 ? { size } : {}),
    ...text('fileName', fileName, LIMITS.subject),
    ...text('caption', caption, LIMITS.body),
    ...(contentFits ? { content } : {}),
  }
}

function text<K extends string>(
  name: K,
  value: string | undefined,
  max: number,
): Partial<Record<K, string>> {
  if (value === undefined || value === '') return {}
  return { [name]: bounded(value, max) } as Partial<Record<K, string>>
}
