/**
 * The vendor webhook routes: every channel of the registry (worker/channels/index.ts), each path
 * of it, the same steps: config → bounded body → verify → parse → classify (gateway.ts and the
 * channel object), then the shared delivery core (deliver.ts; a batch item by item,
 * deliver-batch.ts), whose outcomes become the channel's HTTP reply and one decision log line
 * each.
 * @module
 */
import { Hono } from 'hono'
import { WEBHOOK_CHANNELS } from './channels'
import { httpReply } from './channels/replies'
import type { WebhookChannel } from './channels/types'
import { deliveryContext, logOutcome } from './deliver'
import { deliverAll } from './deliver-batch'
import type { Env } from './env'
import { assertVerifiedTenant, type GatewayContext, verifiedRequest, waitUntil } from './gateway'

export const webhooks = new Hono<{ Bindings: Env }>()

for (const channel of WEBHOOK_CHANNELS) {
  for (const path of channel.paths) webhooks.post(path, (c) => receive(c, channel))
}

async function receive(c: GatewayContext, channel: WebhookChannel): Promise<Response> {
  const request = await verifiedRequest(c, channel.name, channel.pick, (parts, config) =>
    channel.verify(parts, config, c.req.param()),
  )
  const classified = await channel.classify(channel.parse(request.parts), request.tenant)
  assertVerifiedTenant(channel.name, request, classified)
  const ctx = deliveryContext(c.env, request.settings, {
    channel: channel.name,
    startedAt: request.startedAt,
    budgetMs: channel.budgetMs,
    dedupTtlSeconds: request.settings.dedupTtlByChannel[channel.name],
    waitUntil: (promise) => waitUntil(c, promise),
  })
  const outcomes = await deliverAll(ctx, classified, request.parts.body.text)
  const reply = httpReply(channel.replies, outcomes)
  // One line per item of a batch, each with the status the whole request got.
  for (const outcome of outcomes) logOutcome(ctx, outcome, reply.status)
  return reply
}
