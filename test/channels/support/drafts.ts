/**
 * A channel's classify result as a test reads it: its deliveries, the draft it forwards, and
 * whether that draft is an event the origin would take once finalized.
 */
import { expect } from 'vitest'
import { finalizeEvent, type InboundEventDraft, parseInboundEvent } from '../../../contract/event'
import type { ChannelDelivery, Classified, Delivery } from '../../../worker/channels/types'

/** A classify result as its deliveries: one, or each of a batch's. */
export const items = (classified: Classified): readonly ChannelDelivery[] =>
  Array.isArray(classified) ? classified : [classified as ChannelDelivery]

export function draftOf(delivery: Delivery): InboundEventDraft {
  if (delivery.action !== 'forward') throw new Error(`not forwarded: ${JSON.stringify(delivery)}`)
  return delivery.draft
}

/** The draft is a valid event once finalized (the origin would take it). */
export async function expectValid(draft: InboundEventDraft): Promise<void> {
  const parsed = parseInboundEvent(await finalizeEvent(draft))
  expect(parsed.ok ? 'valid' : parsed.message).toBe('valid')
}
