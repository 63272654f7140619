/**
 * An email's attachments (postal-mime's `attachments`: every part that is not the text or HTML
 * body) → the event's attachments, metadata only: kind by MIME type, the type, the decoded size,
 * the file name, and the Content-ID as `mediaId` (what `cid:` links in the HTML name). The bytes
 * never leave this function: not in the event, not in the body, never in Postgres.
 * @module
 */
import type { Attachment as MimePart } from 'postal-mime'
import { boundAttachments, kindOfMimeType } from '../contract/attachments'
import type { Attachment } from '../contract/event'
import { clean } from '../shared/text'

export function emailAttachments(parts: readonly MimePart[]): Attachment[] | undefined {
  return boundAttachments(
    parts.map((part) => ({
      kind: kindOfMimeType(part.mimeType),
      mediaId: contentIdOf(part.contentId),
      mimeType: part.mimeType || undefined,
      size: sizeOf(part.content),
      fileName: part.filename ? clean(part.filename).trim() || undefined : undefined,
    })),
  )
}

/** `<logo@example.com>` → `logo@example.com`, as a `cid:` URL names it. */
function contentIdOf(contentId: string | undefined): string | undefined {
  const id = clean(contentId ?? '')
    .trim()
    .replace(/^<(.*)>$/, '$1')
    .trim()
  return id || undefined
}

/** Decoded bytes (postal-mime hands binary content by default; a string would be base64/utf8). */
function sizeOf(content: MimePart['content']): number | undefined {
  return typeof content === 'string' ? undefined : content.byteLength
}
