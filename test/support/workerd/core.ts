/**
 * Deliveries handed straight to the delivery core (worker/deliver-batch.ts), channel-free, as a
 * front door would, with its `waitUntil` work awaited: the outcomes, and the status a webhook
 * would answer with.
 * @module
 */
import { httpReply, plainReplies } from '../../../worker/channels/replies'
import type { ChannelDelivery } from '../../../worker/channels/types'
import { settingsFor } from '../../../worker/config'
import { deliveryContext, type Outcome } from '../../../worker/deliver'
import { deliverAll } from '../../../worker/deliver-batch'
import type { Env } from '../../../worker/env'

export async function deliverToCore(
  env: Env,
  items: readonly ChannelDelivery[],
  channel = 'core-test',
): Promise<{ outcomes: Outcome[]; status: number }> {
  const pending: Promise<unknown>[] = []
  const ctx = deliveryContext(env, settingsFor(env), {
    channel,
    startedAt: Date.now(),
    budgetMs: 10_000,
    waitUntil: (promise) => pending.push(promise),
  })
  const outcomes = await deliverAll(ctx, items, '')
  await Promise.all(pending.splice(0))
  return { outcomes, status: httpReply(plainReplies, outcomes).status }
}
