/**
 * What becomes of a verified delivery the channel's code cannot place. "Ignored" is a list, per
 * channel (each channel object's `ignored`): an `ignore` whose reason is not on it is no
 * documented non-message event, so it is placed here as unrecognized ({@link placeIgnored}).
 * An unrecognized delivery is kept whole ({@link keepUnrecognized}): its body (or a batch item's
 * own envelope), the tenant that verified it and what that tenant vouched for, as a dead letter
 * `unrecognized_event` through SPOOL_DEAD (R2 for a large one), which the dead-letter consumer
 * records in the origin's `channel_failures`; the vendor is told "ok" only once it is sent. A
 * replay classifies it again (worker/unrecognized-replay.ts).
 * @module
 */

import { keyPart } from '../contract/delivery-key'
import type { InboundEventDraft } from '../contract/event'
import {
  keptBody,
  parseUnrecognizedEvent,
  UNRECOGNIZED_ERROR,
  UNRECOGNIZED_KIND,
} from '../contract/unrecognized-event'
import { sha256Hex } from '../shared/crypto'
import type { Classified, Delivery, WebhookChannel } from './channels/types'
import { isBatch } from './channels/types'
import { type DeliveryContext, sendBudgetMs } from './delivery-context'
import { describeError, logProblem } from './log'
import type { Outcome } from './outcome'
import { deadMessage } from './spool/message'
import { sendDeadLetter } from './spool/producer'

/** Its reason when its dead letter could not be sent (the vendor is asked again). */
export const UNRECOGNIZED_NOT_RECORDED = 'unrecognized_event_not_recorded'
/** Its reason when it is too large to keep whole (the vendor is asked again). */
export const UNRECOGNIZED_TOO_LARGE = 'unrecognized_event_too_large'

/**
 * Every `ignore` whose reason the channel does not list, and every new message with nothing to
 * show (no text, no attachment: no channel writes an empty row), as an unrecognized delivery.
 */
export function placeIgnored(channel: WebhookChannel, classified: Classified): Classified {
  const place = (delivery: Delivery): Delivery => {
    if (delivery.action === 'ignore' && !Object.hasOwn(channel.ignored, delivery.reason)) {
      return { action: 'unrecognized', reason: delivery.reason }
    }
    if (delivery.action === 'forward' && isEmptyMessage(delivery.draft)) {
      return { action: 'unrecognized', reason: `${channel.name}_empty_message` }
    }
    return delivery
  }
  if (!isBatch(classified)) return place(classified)
  return classified.map((item) => place(item) as typeof item)
}

function isEmptyMessage(draft: InboundEventDraft): boolean {
  return draft.kind === 'message' && draft.body.trim() === '' && !draft.attachments?.length
}

/**
 * Keeps an unrecognized delivery as a dead letter; "taken" once it is sent. Kept nowhere (too
 * large, the queue failing): the vendor's retry answer. A replay that is still unrecognized keeps
 * nothing more (its row is there already).
 */
export async function keepUnrecognized(
  ctx: DeliveryContext,
  delivery: Extract<Delivery, { action: 'unrecognized' }>,
): Promise<Outcome> {
  const { reason } = delivery
  if (ctx.replaying) return { decision: 'unrecognized', decidedBy: 'gateway', reason }
  const received = ctx.received
  if (!received) throw new Error('an unrecognized delivery without its request')
  const text = delivery.payload ?? received.text
  const hash = (await sha256Hex(text)).slice(0, 32)
  const tenantPart = await keyPart(received.tenant ?? '-')
  const deliveryKey = `dedup:${UNRECOGNIZED_KIND}:${received.channel}:${tenantPart}:h${hash}`
  const parsed = parseUnrecognizedEvent({
    v: 1,
    kind: UNRECOGNIZED_KIND,
    channel: received.channel,
    deliveryKey,
    reason: reason.slice(0, 128),
    tenant: received.tenant,
    ...(received.scopes ? { scopes: [...received.scopes] } : {}),
    ...(received.writesFor ? { writesFor: [...received.writesFor] } : {}),
    ...(received.connection ? { connection: received.connection } : {}),
    path: received.path.slice(0, 2048),
    contentType: received.contentType?.slice(0, 256) ?? null,
    ...keptBody(text),
    receivedAt: Date.now(),
  })
  const fields = { deliveryKey, reason }
  if (!parsed.ok) {
    logProblem('error', UNRECOGNIZED_TOO_LARGE, { channel: received.channel, deliveryKey })
    return { ...fields, decision: 'retry', decidedBy: 'gateway', reason: UNRECOGNIZED_TOO_LARGE }
  }
  const dead = deadMessage(
    { claimKey: deliveryKey, queuedAt: Date.now(), event: parsed.event },
    1,
    `${UNRECOGNIZED_ERROR}: ${reason}`,
  )
  try {
    await sendDeadLetter(ctx.deadLetters, ctx.bodies, dead, sendBudgetMs(ctx))
  } catch (err) {
    logProblem('error', UNRECOGNIZED_NOT_RECORDED, {
      channel: received.channel,
      deliveryKey,
      error: describeError(err),
    })
    return {
      ...fields,
      decision: 'retry',
      decidedBy: 'gateway',
      reason: UNRECOGNIZED_NOT_RECORDED,
    }
  }
  return { ...fields, decision: 'unrecognized', decidedBy: 'gateway' }
}
