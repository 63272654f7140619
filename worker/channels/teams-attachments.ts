/**
 * A Teams activity's `attachments[]` as the event's attachments (docs/keys.md's attachments
 * table): files, inline images, cards; never `text/html`, Teams' rendering of the text itself.
 * @module
 */
import { kindOfMimeType } from '../../contract/attachments'
import type { Attachment } from '../../contract/event'
import { list, obj, str } from './untrusted'

type Activity = Record<string, unknown>

/** Teams' rendering of the text itself, not an attachment. */
const HTML_TEXT = 'text/html'
const FILE_DOWNLOAD = 'application/vnd.microsoft.teams.file.download.info'

/** `activity.attachments[]`: files, inline images, cards (docs/keys.md's attachments table). */
export function teamsAttachments(activity: Activity): Attachment[] {
  return list(activity.attachments).flatMap((entry): Attachment[] => {
    const attachment = obj(entry)
    const contentType = str(attachment?.contentType)
    if (!attachment || !contentType || contentType === HTML_TEXT) return []
    const content = obj(attachment.content)
    const fileName = str(attachment.name) ?? undefined
    if (contentType === FILE_DOWNLOAD) {
      const fileType = str(content?.fileType)
      return [
        {
          kind: 'file',
          ...optional('mediaId', str(content?.uniqueId)),
          ...optional('url', str(content?.downloadUrl)),
          ...optional('fileName', fileName ?? null),
          ...(fileType ? { content: { fileType } } : {}),
        },
      ]
    }
    return [
      {
        kind: kindOfMimeType(contentType),
        mimeType: contentType,
        ...optional('url', str(attachment.contentUrl)),
        ...optional('fileName', fileName ?? null),
        // A card (adaptive, hero, ...) is its JSON; boundAttachments drops one over 16 KiB.
        ...(content ? { content } : {}),
      },
    ]
  })
}

function optional<K extends string>(name: K, value: string | null): Partial<Record<K, string>> {
  return value === null ? {} : ({ [name]: value } as Partial<Record<K, string>>)
}
