/**
 * Twilio's inbound media (`NumMedia`, `MediaUrl{N}`, `MediaContentType{N}`, N from 0; vendor-
 * protocols-2 §3.1) → the event's attachments. `url` is the media URL, which needs HTTP Basic auth
 * (an API key, or the account's SID and Auth Token); `mediaId` the Media SID (`ME…`) its path ends
 * with. Twilio reports no size or file name. The gateway never fetches the media.
 * @module
 */
import { boundAttachments, kindOfMimeType } from '../../contract/attachments'
import { type Attachment, LIMITS } from '../../contract/event'
import { str } from './types'

const MEDIA_SID = /\/Media\/(ME[0-9a-fA-F]{32})\/?$/

export function twilioAttachments(params: ReadonlyMap<string, string>): Attachment[] | undefined {
  const declared = Number(params.get('NumMedia') ?? 0)
  if (!Number.isSafeInteger(declared) || declared <= 0) return undefined
  const attachments: Attachment[] = []
  // Only as many as an event keeps: a forged NumMedia of 10^9 costs nothing.
  for (let n = 0; n < Math.min(declared, LIMITS.attachments); n++) {
    const url = str(params.get(`MediaUrl${n}`))
    if (!url) continue
    const mimeType = str(params.get(`MediaContentType${n}`))
    attachments.push({
      kind: kindOfMimeType(mimeType),
      mediaId: MEDIA_SID.exec(url)?.[1],
      url,
      mimeType: mimeType ?? undefined,
    })
  }
  return boundAttachments(attachments)
}
