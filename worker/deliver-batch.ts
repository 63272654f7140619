/**
 * Batched deliveries: one request that carries several (Meta's
 * `entry[].changes[].value.messages[]`, for several phone numbers). Each item is its own event
 * with its own keys: the delivery core (deliver.ts) claims, forwards and queues it on its own, at
 * most {@link BATCH_CONCURRENCY} at a time (each item costs a few subrequests: claim, forward,
 * settle). The request is taken only when every item is; the vendor's retry of the whole batch
 * then finds the taken items settled (duplicates, from Redis or Postgres) and adds only what is
 * missing.
 *
 * An item refused for good (the origin's 400 / 413 / 422, or an event the schema refuses) is
 * dead-lettered and counts as taken: retrying the whole batch cannot help it, and a vendor would
 * go on for days (Meta: up to 7) while its good neighbours are answered as duplicates each time.
 * Unless its dead letter cannot be sent: an item kept nowhere is never answered as taken.
 * @module
 */
import { finalizeEvent } from '../contract/event'
import type { ChannelDelivery, Classified } from './channels/types'
import { formatDeliveryKey, isBatch } from './channels/types'
import { type DeliveryContext, deliver, type Outcome } from './deliver'
import { NOT_RECORDED, recordRefused } from './deliver-spool'
import { InvalidPayloadError } from './errors'
import { describeError } from './log'

/** Items of one batch in flight at once: a bound on the subrequests and Redis calls at a time. */
export const BATCH_CONCURRENCY = 8

/** Every item's outcome, in the batch's order (one for a single delivery). */
export async function deliverAll(
  ctx: DeliveryContext,
  classified: Classified,
  rawBody: string,
): Promise<Outcome[]> {
  if (!isBatch(classified)) return [await deliver(ctx, classified, rawBody)]
  if (classified.length === 0) {
    return [{ decision: 'ignored', decidedBy: 'gateway', reason: 'empty_batch' }]
  }
  return mapBounded(classified, BATCH_CONCURRENCY, (item) => deliverItem(ctx, item, rawBody))
}

/** One item of a batch: what goes wrong with it stays its own (the others are delivered). */
async function deliverItem(
  ctx: DeliveryContext,
  item: ChannelDelivery,
  rawBody: string,
): Promise<Outcome> {
  try {
    return await deliver(ctx, item, rawBody)
  } catch (err) {
    // Nothing to go wrong (an unrecognized item answers retry itself): a bug, for app.onError.
    if (item.action === 'ignore' || item.action === 'unrecognized') throw err
    const deliveryKey = formatDeliveryKey(item.key)
    const channel = item.action === 'forward' ? item.draft.channel : undefined
    if (err instanceof InvalidPayloadError && item.action === 'forward') {
      // A single request would be answered 400; in a batch that would send every item again.
      // The dead letter keeps the finalized event (schema version, payload hash), as the origin's
      // replay parses it: once the cause is fixed, the replay lands it.
      const event = await finalizeEvent(item.draft)
      if (await recordRefused(ctx, item.key, event, err.detail)) {
        return {
          channel,
          deliveryKey,
          decision: 'rejected',
          decidedBy: 'gateway',
          reason: err.code,
        }
      }
      // Kept nowhere: the vendor sends the batch again (its taken items are duplicates then).
      return { channel, deliveryKey, decision: 'retry', decidedBy: 'gateway', reason: NOT_RECORDED }
    }
    // Not the item's fault (a bug, a runtime limit): ask again; the taken items are duplicates then.
    return {
      channel,
      deliveryKey,
      decision: 'retry',
      decidedBy: 'gateway',
      reason: describeError(err),
    }
  }
}

/** `work` over `items`, at most `limit` at once, results in the items' order. */
export async function mapBounded<T, R>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await work(items[index] as T)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
  return results
}
