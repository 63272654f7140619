/**
 * Slack `files[]` of a message event (subtype `file_share`, or any message carrying files) → the
 * event's attachments (vendor-protocols-2 §4). `mediaId` is the file id (`files.info` gives the
 * full object), `url` is `url_private`, which needs a token with `files:read`; the gateway never
 * fetches it. A Slack Connect stub (`file_access: check_file_info`) has an id only.
 * @module
 */
import { boundAttachments, kindOfMimeType } from '../../contract/attachments'
import type { Attachment } from '../../contract/event'
import { obj, str } from './types'

/** The message's files as the draft's `attachments` field (spread it in; none: nothing). */
export function slackFiles(message: Record<string, unknown>): { attachments?: Attachment[] } {
  const attachments = Array.isArray(message.files) ? attachmentsOf(message.files) : undefined
  return attachments ? { attachments } : {}
}

function attachmentsOf(files: unknown[]): Attachment[] | undefined {
  const attachments: Attachment[] = []
  for (const file of files.map(obj)) {
    const id = str(file?.id)
    if (!file || !id) continue
    const mimeType = str(file.mimetype)
    attachments.push({
      kind: kindOfMimeType(mimeType),
      mediaId: id,
      url: str(file.url_private) ?? undefined,
      mimeType: mimeType ?? undefined,
      size: typeof file.size === 'number' ? file.size : undefined,
      fileName: str(file.name) ?? str(file.title) ?? undefined,
    })
  }
  return boundAttachments(attachments)
}
