/**
 * The byte-largest event a channel can produce that the schema still accepts: every bounded field
 * at its bound (most attachments; for email, a subject and the most References), in characters
 * that cost the most UTF-8 bytes per UTF-16 unit the schema counts (3-byte CJK; a 4-byte one
 * where a surrogate pair could be split), then the text and the captions filled up to
 * LIMITS.eventBytes.
 * @module
 */
import {
  type Channel,
  finalizeEvent,
  type InboundEvent,
  type InboundEventDraft,
  jsonBytes,
  LIMITS,
} from '../../../contract/event'
import { randomId } from '../../../local/vendor-deliveries'
import type { ChannelDelivery } from '../../../worker/channels/types'

const WIDE = '中' // 3 bytes for one UTF-16 unit
const PAIR = '𠜎' // 4 bytes for two units

export interface LargestEvent {
  delivery: Extract<ChannelDelivery, { action: 'forward' }>
  event: InboundEvent
}

export async function largestEvent(channel: Channel): Promise<LargestEvent> {
  const tenant = `T${randomId()}`
  const id = `big${randomId()}`
  const key = { namespace: 'largest', scope: tenant, id }
  const draft: InboundEventDraft = {
    kind: 'message',
    channel,
    tenant,
    deliveryKey: `dedup:largest:${tenant}:${id}`,
    messageKey: `${tenant}:${id}`,
    sender: { externalId: `+1555${randomId()}`, displayName: PAIR.repeat(LIMITS.name / 2) },
    body: '',
    occurredAt: '2026-12-01T10:00:00.000Z',
    ...(channel === 'email'
      ? {
          subject: WIDE.repeat(LIMITS.subject),
          references: Array.from({ length: LIMITS.references }, (_, n) =>
            `${n}:`.padEnd(LIMITS.key, WIDE),
          ),
        }
      : {}),
    attachments: Array.from({ length: LIMITS.attachments }, (_, n) => ({
      kind: 'document' as const,
      mediaId: `media-${n}-${randomId()}`,
      mimeType: 'application/pdf',
      size: 1_000_000,
      fileName: `${n}-${PAIR.repeat(8)}.pdf`,
    })),
  }
  fillTo(draft, LIMITS.eventBytes)
  const event = await finalizeEvent(draft)
  return { delivery: { action: 'forward', key, draft }, event }
}

/** The text, then each attachment's caption, as long as the event stays within `maxBytes`. */
function fillTo(draft: InboundEventDraft, maxBytes: number): void {
  // finalizeEvent adds `"v":1,` and a 16-hex `"payloadHash"`: a fixed number of bytes.
  const finalized = (d: InboundEventDraft) => ({ v: 1, ...d, payloadHash: '0'.repeat(16) })
  const room = () => maxBytes - jsonBytes(finalized(draft))
  draft.body = WIDE.repeat(Math.min(LIMITS.body, Math.floor(room() / 3)))
  const captionField = jsonBytes({ caption: '' }) - 1 // `,"caption":""`
  for (const attachment of draft.attachments ?? []) {
    const units = Math.min(LIMITS.body, Math.floor((room() - captionField) / 3))
    if (units <= 0) break
    attachment.caption = WIDE.repeat(units)
  }
}
