/**
 * Keeping a normalized event within LIMITS.eventBytes when every field is within its own bound
 * but all of them together are not (an email: a long text in a wide script, a hundred long
 * References, many attachments with long names). What is least needed goes first: the farthest
 * References (the nearest thread the message), then the last attachments, then the end of the
 * text. A message is never refused for its size.
 * @module
 */

import { type InboundEventDraft, jsonBytes, LIMITS } from '../contract/event'
import { bounded } from '../shared/text'

/** What finalizeEvent adds, at its largest (a 64-hex payload hash). */
const FINALIZED_BYTES = jsonBytes({ v: 1, payloadHash: '0'.repeat(64) })

/** The draft itself when it fits once finalized, else a copy cut to fit. */
export function fitToEventBytes(draft: InboundEventDraft): InboundEventDraft {
  let excess = jsonBytes(draft) + FINALIZED_BYTES - LIMITS.eventBytes
  if (excess <= 0) return draft
  const references = [...(draft.references ?? [])]
  while (excess > 0 && references.length > 0) excess -= jsonBytes(references.pop()) + 1
  const attachments = [...(draft.attachments ?? [])]
  while (excess > 0 && attachments.length > 0) excess -= jsonBytes(attachments.pop()) + 1
  const { attachments: _, ...rest } = draft
  return {
    ...rest,
    ...(draft.references ? { references } : {}),
    // None left: no field at all, as for a message that never had any (its payload hash).
    ...(attachments.length > 0 ? { attachments } : {}),
    body: excess > 0 ? cutToJsonBytes(draft.body, jsonBytes(draft.body) - excess) : draft.body,
  }
}

/** The longest start of `text` whose JSON is at most `maxBytes`, never half a surrogate pair. */
function cutToJsonBytes(text: string, maxBytes: number): string {
  let cut = text
  for (let bytes = jsonBytes(cut); bytes > maxBytes && cut.length > 0; bytes = jsonBytes(cut)) {
    // At least one unit less each round; the ratio gets there in a few.
    const units = Math.min(cut.length - 1, Math.floor((cut.length * maxBytes) / bytes))
    cut = bounded(cut, Math.max(units, 0))
  }
  return cut
}
