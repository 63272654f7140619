/**
 * The vendor webhook routes: every channel of the registry (worker/channels/index.ts), each path
 * of it (and a GET handshake where the channel has one), the same steps: admission (the isolate's
 * in-flight bound, worker/admission.ts) → config → bounded body →
 * verify → parse → classify (gateway.ts and the channel object), then the shared delivery core
 * (deliver.ts; a batch item by item, deliver-batch.ts), whose outcomes become the channel's HTTP
 * reply and one decision log line each.
 * @module
 */
import { Hono } from 'hono'
import { DECISION_HEADER } from '../contract/decision-log'
import type { SignatureBinding } from '../contract/signature-binding'
import { admission } from './admission'
import { WEBHOOK_CHANNELS } from './channels'
import { challengeReply, httpReply } from './channels/replies'
import { type Classified, deliveriesOf, type WebhookChannel } from './channels/types'
import { channelConfig, settingsFor } from './config'
import { verifiedTenantConnection } from './connections/after-verify'
import { carryConnection } from './connections/config'
import { byIndexOrVariables, byRoute, CONNECTION_PARAM, connectionPath } from './connections/pick'
import { connectionFields, deliveryContext, logOutcome } from './deliver'
import { deliverAll } from './deliver-batch'
import type { ReceivedRequest } from './delivery-context'
import type { Env } from './env'
import { ChannelNotConfiguredError, ForbiddenError } from './errors'
import {
  assertVerifiedTenant,
  type ConfigPicker,
  claimStoreFor,
  type GatewayContext,
  type VerifiedRequest,
  verifiedRequest,
  waitUntil,
} from './gateway'
import { logDecision } from './log'
import { claimSignatureOnce, refusePending } from './signature-once'
import { placeIgnored } from './unrecognized'

export const webhooks = new Hono<{ Bindings: Env }>()

for (const channel of WEBHOOK_CHANNELS) serve(channel)

function serve(channel: WebhookChannel): void {
  // Before any verification: over the isolate's bound, the channel's own retry answer.
  const admit = admission(channel.name, () => channel.replies.retryLater())
  const variables: ConfigPicker<unknown> = (settings) => ({
    config: channelConfig(settings, channel),
  })
  for (const path of channel.paths) {
    webhooks.post(path, admit, (c) =>
      receive(c, channel, byIndexOrVariables(c.env, channel, c.req.param())),
    )
    if (channel.handshake) webhooks.get(path, admit, (c) => handshake(c, channel, variables))
  }
  // One connection's own route (worker/connections/): its id picks its secrets, nothing else.
  const own = (c: GatewayContext) => byRoute(c.env, channel, c.req.param(CONNECTION_PARAM) ?? '')
  webhooks.post(connectionPath(channel), admit, (c) => receive(c, channel, own(c)))
  if (channel.handshake) {
    webhooks.get(connectionPath(channel), admit, (c) => handshake(c, channel, own(c)))
  }
}

/** A channel's GET handshake: config (503), then its own check (403), then the challenge. */
async function handshake(
  c: GatewayContext,
  channel: WebhookChannel,
  pick: ConfigPicker<unknown>,
): Promise<Response> {
  const startedAt = Date.now()
  const settings = settingsFor(c.env)
  const picked = await pick(settings, () => Promise.reject(new Error('a handshake has no body')))
  const config = picked.config
  if (!config.ok) throw new ChannelNotConfiguredError(channel.name, config.missing)
  const query = new URL(c.req.url).searchParams
  const params = picked.params ?? c.req.param()
  const verdict = await channel.handshake?.(query, config.value, params)
  if (!verdict?.ok)
    throw new ForbiddenError(`${channel.name}: ${verdict?.reason ?? 'no handshake'}`)
  // A signed handshake URL sits in access logs: it is spent here, not reusable for a POST.
  if (verdict.once) {
    const once = await claimSignatureOnce(
      settings,
      claimStoreFor(settings),
      channel.name,
      verdict.once,
    )
    if (once.kind === 'pending') refusePending(channel.name)
  }
  const reply = challengeReply(verdict.challenge)
  logDecision({
    channel: channel.name,
    decision: 'challenge',
    decidedBy: 'gateway',
    status: reply.status,
    ms: Date.now() - startedAt,
    ...(picked.connection ? connectionFields(picked.connection) : {}),
  })
  return reply
}

async function receive(
  c: GatewayContext,
  channel: WebhookChannel,
  pick: ConfigPicker<unknown>,
): Promise<Response> {
  const request = await verifiedRequest(
    c,
    channel.name,
    pick,
    (parts, config, params) => channel.verify(parts, config, params ?? c.req.param()),
    channel.maxBodyBytes,
  )
  // Teams names its bot only in the token: the registry answers for it once verified.
  if (!request.connection) {
    const held = await verifiedTenantConnection(c.env, channel.name, request.tenant)
    if (held) request.connection = held
  }
  const parsed = channel.parse(request.parts)
  const classified = placeIgnored(channel, await channel.classify(parsed, request.tenant))
  assertVerifiedTenant(channel.name, request, classified)
  if (request.pendingBinding) carryBinding(classified, request.pendingBinding)
  if (request.connection) carryConnection(classified, request.connection)
  const ctx = deliveryContext(c.env, request.settings, {
    channel: channel.name,
    startedAt: request.startedAt,
    budgetMs: channel.budgetMs,
    dedupTtlSeconds: request.settings.dedupTtlByChannel[channel.name],
    waitUntil: (promise) => waitUntil(c, promise),
    received: receivedRequest(channel, request),
    ...(request.connection ? { connection: request.connection } : {}),
  })
  const outcomes = await deliverAll(ctx, classified, request.parts.body.text)
  const reply = httpReply(channel.replies, outcomes)
  reply.headers.set(DECISION_HEADER, outcomes.map((outcome) => outcome.decision).join(','))
  // One line per item of a batch, each with the status the whole request got.
  for (const outcome of outcomes) logOutcome(ctx, outcome, reply.status)
  return reply
}

/** Each event of the request carries its signature's pending binding, for the origin to bind. */
function carryBinding(classified: Classified, binding: SignatureBinding): void {
  for (const delivery of deliveriesOf(classified)) {
    if (delivery.action === 'forward') delivery.draft.signatureBinding = binding
  }
}

/** The verified request, as an unrecognized delivery of it is kept (worker/unrecognized.ts). */
function receivedRequest(
  channel: WebhookChannel,
  request: VerifiedRequest<unknown>,
): ReceivedRequest {
  const url = new URL(request.parts.url)
  return {
    channel: channel.name,
    tenant: request.tenant,
    ...(request.scopes ? { scopes: request.scopes } : {}),
    ...(request.writesFor ? { writesFor: request.writesFor } : {}),
    ...(request.connection ? { connection: request.connection } : {}),
    path: `${url.pathname}${url.search}`,
    contentType: request.parts.headers.get('content-type'),
    text: channel.replayText?.(request.parts) ?? request.parts.body.text,
  }
}
