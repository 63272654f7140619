/**
 * Twilio's inbound media (`NumMedia`, `MediaUrl{N}`, `MediaContentType{N}`, N from 0; vendor-
 * protocols-2 §3.1) → the event's attachments. `url` is the media URL, which needs HTTP Basic auth
 * (an API key, or the account's SID and Auth Token); `mediaId` the Media SID (`ME…`) its path ends
 * with. Twilio reports no size or file name. The gateway never fetches the media. A WhatsApp
 * location (`Latitude`, `Longitude`, `Address`, `Label`; vendor-protocols §3) comes with an empty
 * Body: it is a `location` attachment with its content, the shape the other channels give it.
 * @module
 */
import { boundAttachments, kindOfMimeType } from '../../contract/attachments'
import { type Attachment, LIMITS } from '../../contract/event'
import { str } from './untrusted'

const MEDIA_SID = /\/Media\/(ME[0-9a-fA-F]{32})\/?$/

export function twilioAttachments(params: ReadonlyMap<string, string>): Attachment[] | undefined {
  const location = twilioLocation(params)
  const media = twilioMedia(params)
  if (!location && !media) return undefined
  return boundAttachments([...(location ? [location] : []), ...(media ?? [])])
}

function twilioMedia(params: ReadonlyMap<string, string>): Attachment[] | undefined {
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
  return attachments
}

/** Decimal degrees, as Twilio sends them (`37.7879277`); anything else is no location. */
function degrees(value: string | undefined, limit: number): number | null {
  if (value === undefined || !/^-?\d{1,3}(\.\d+)?$/.test(value.trim())) return null
  const n = Number(value)
  return Math.abs(n) <= limit ? n : null
}

function twilioLocation(params: ReadonlyMap<string, string>): Attachment | null {
  const latitude = degrees(params.get('Latitude'), 90)
  const longitude = degrees(params.get('Longitude'), 180)
  if (latitude === null || longitude === null) return null
  const name = str(params.get('Label')) ?? undefined
  const address = str(params.get('Address')) ?? undefined
  return { kind: 'location', content: { latitude, longitude, name, address } }
}
