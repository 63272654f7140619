/**
 * What a LINE message says, by its type (the webhook OpenAPI's MessageContent: text, image,
 * video, audio, file, location, sticker): the row's text and attachments. A type not among them
 * is no content this code can place (line.ts keeps the event as unrecognized).
 * @module
 */
import type { Attachment } from '../../contract/event'
import { obj, str } from './untrusted'

type Json = Record<string, unknown>

const text = (value: unknown) => (typeof value === 'string' ? value : undefined)
const MEDIA = new Set(['image', 'video', 'audio', 'file'])

/**
 * A message's text and attachments, by its type (the webhook OpenAPI's MessageContent). LINE
 * serves a media message's content by the message id (GET /v2/bot/message/{id}/content, with the
 * channel's token): that is its `mediaId`; `external` content has its own URL too.
 */
export function lineContent(
  message: Json,
  id: string,
): { body: string; attachments: Attachment[] } | null {
  const type = str(message.type)
  if (type === 'text') return { body: text(message.text) ?? '', attachments: [] }
  if (type !== null && MEDIA.has(type)) {
    const provider = obj(message.contentProvider)
    const { fileName, fileSize, duration, imageSet } = message
    const media: Attachment = {
      kind: type as Attachment['kind'],
      mediaId: id,
      url: provider?.type === 'external' ? text(provider.originalContentUrl) : undefined,
      fileName: text(fileName),
      size: typeof fileSize === 'number' ? fileSize : undefined,
      content: { ...(obj(imageSet) ? { imageSet } : {}), ...(duration ? { duration } : {}) },
    }
    return { body: '', attachments: [media] }
  }
  if (type === 'location') {
    const { title, address, latitude, longitude } = message
    const content = { title, address, latitude, longitude }
    return { body: '', attachments: [{ kind: 'location', content }] }
  }
  if (type === 'sticker') {
    const { packageId, stickerResourceType, keywords } = message
    const sticker: Attachment = {
      kind: 'sticker',
      mediaId: text(message.stickerId),
      content: { packageId, stickerResourceType, keywords },
    }
    // A message sticker carries the text the user typed on it.
    return { body: text(message.text) ?? '', attachments: [sticker] }
  }
  return null
}
