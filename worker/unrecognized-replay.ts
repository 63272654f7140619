/**
 * `POST /internal/unrecognized/replay`: the origin hands back a kept unrecognized event
 * (contract/unrecognized-event.ts) for the code this Worker runs now to place. Signed by the origin
 * with the forward scheme (ORIGIN_SHARED_SECRET, method- and route-bound, five minutes), and
 * answered signed with the secret that verified it, so each side takes only the other's word.
 *
 * The stored body is parsed and classified again by its channel's own steps, with the tenant and
 * scopes that verified it at first receipt (the vendor's signature is not checked again: it was,
 * then, and a timestamped signature would be stale by now), and the same tenant check as every
 * webhook (gateway.ts `assertVerifiedTenant`): a body that now names another tenant's ids is
 * refused. Still unrecognized: nothing is delivered and the answer says so (its row stays dead).
 * Placed: every delivery goes through the ordinary delivery core (claim, forward, queue), and the
 * answer is `delivered` once every one was taken.
 * @module
 */
import { Hono } from 'hono'
import type { ConnectionChannel, EventConnection } from '../contract/connection'
import { LIMITS } from '../contract/event'
import {
  ANSWER_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  signAnswer,
  TIMESTAMP_HEADER,
  verifyForward,
} from '../contract/forward-signature'
import {
  bodyText,
  parseUnrecognizedEvent,
  UNRECOGNIZED_REPLAY_ROUTE,
  type UnrecognizedEvent,
  type UnrecognizedReplayAnswer,
} from '../contract/unrecognized-event'
import { BodyOverLimitError, readBoundedBody } from '../shared/body'
import { utf8 } from '../shared/crypto'
import { WEBHOOK_CHANNELS } from './channels'
import { deliveriesOf, type RequestParts, type WebhookChannel } from './channels/types'
import { channelConfig, type Settings, settingsFor } from './config'
import { carryConnection, usableConnection } from './connections/config'
import { connectionById } from './connections/reader'
import { deliveryContext, logOutcome } from './deliver'
import { deliverAll } from './deliver-batch'
import type { Env } from './env'
import {
  BodyTooLargeError,
  ChannelNotConfiguredError,
  ForbiddenError,
  GatewayError,
  InvalidPayloadError,
  UnauthorizedError,
} from './errors'
import { assertVerifiedTenant, waitUntil } from './gateway'
import { placeIgnored } from './unrecognized'

export const unrecognizedReplay = new Hono<{ Bindings: Env }>()

/** The request is `{event}`; the event itself is bounded by the contract. */
const MAX_REQUEST_BYTES = LIMITS.eventBytes + 16 * 1024

unrecognizedReplay.post('/', async (c) => {
  const startedAt = Date.now()
  const settings = settingsFor(c.env)
  const origin = settings.origin
  if (!origin) throw new ChannelNotConfiguredError('unrecognized_replay', ['ORIGIN_URL'])
  const raw = await readBoundedBody(c.req.raw, MAX_REQUEST_BYTES).catch((err: unknown) => {
    if (err instanceof BodyOverLimitError)
      throw new BodyTooLargeError(err.limitBytes, err.seenBytes)
    throw err
  })
  const requestSignature = c.req.header(SIGNATURE_HEADER) ?? ''
  const verdict = await verifyForward(origin.secrets, UNRECOGNIZED_REPLAY_ROUTE, raw.text, {
    timestamp: c.req.header(TIMESTAMP_HEADER),
    signature: requestSignature,
  })
  if (!verdict.ok) throw new UnauthorizedError(`unrecognized replay: ${verdict.reason}`)
  const answer = await replayKept(c.env, settings, readEvent(raw.text), startedAt, (work) =>
    waitUntil(c, work),
  )
  const body = JSON.stringify(answer)
  const signature = await signAnswer(verdict.secret, requestSignature, 200, body)
  return new Response(body, {
    headers: { 'content-type': 'application/json', [ANSWER_SIGNATURE_HEADER]: signature },
  })
})

function readEvent(text: string): UnrecognizedEvent {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch (err) {
    throw new InvalidPayloadError('unrecognized replay: not JSON', { cause: err })
  }
  const parsed = parseUnrecognizedEvent((body as { event?: unknown } | null)?.event)
  if (!parsed.ok) throw new InvalidPayloadError(parsed.message)
  return parsed.event
}

/** The kept event through its channel's parse and classify, then the delivery core. */
async function replayKept(
  env: Env,
  settings: Settings,
  event: UnrecognizedEvent,
  startedAt: number,
  later: (work: Promise<unknown>) => void,
): Promise<UnrecognizedReplayAnswer> {
  const channel: WebhookChannel | undefined = WEBHOOK_CHANNELS.find(
    (candidate) => candidate.name === event.channel,
  )
  if (!channel) return still(`no channel ${event.channel} in this Worker`)
  // A connection's event needs that connection still active (its current version goes on the
  // event); the variables' needs the channel configured.
  const connection = event.connection ? await stillActive(env, channel, event.connection) : null
  if (connection === 'disabled') return still('connection_disabled')
  const config = channelConfig(settings, channel)
  if (!connection && !config.ok) throw new ChannelNotConfiguredError(channel.name, config.missing)
  const text = bodyText(event)
  const parts: RequestParts = {
    url: new URL(event.path, 'https://replay.invalid').toString(),
    headers: new Headers(event.contentType ? { 'content-type': event.contentType } : {}),
    body: { bytes: utf8(text), text },
  }
  const request = {
    tenant: event.tenant,
    handshakeOnly: false,
    ...(event.scopes ? { scopes: new Set(event.scopes) } : {}),
    ...(event.writesFor ? { writesFor: new Set(event.writesFor) } : {}),
  }
  let classified: ReturnType<typeof placeIgnored>
  try {
    classified = placeIgnored(channel, await channel.classify(channel.parse(parts), event.tenant))
    assertVerifiedTenant(channel.name, request, classified)
  } catch (err) {
    // Refused now (a body the channel refuses, another tenant's ids): it stays a dead letter.
    if (err instanceof GatewayError && err.status < 500) return still(err.code)
    throw err
  }
  if (connection) carryConnection(classified, connection)
  const unplaced = deliveriesOf(classified).find((item) => item.action === 'unrecognized')
  if (unplaced?.action === 'unrecognized') return still(unplaced.reason)
  const ctx = deliveryContext(env, settings, {
    channel: channel.name,
    startedAt,
    budgetMs: channel.budgetMs,
    dedupTtlSeconds: settings.dedupTtlByChannel[channel.name],
    waitUntil: later,
    replaying: true,
  })
  const outcomes = await deliverAll(ctx, classified, text)
  const taken = outcomes.every((outcome) => outcome.decision !== 'retry')
  for (const outcome of outcomes) logOutcome(ctx, outcome, taken ? 200 : 503)
  const decisions = outcomes.map((outcome) => outcome.decision)
  return taken ? { outcome: 'delivered', decisions } : { outcome: 'retry', decisions }
}

/** The connection as KV holds it now: active (its current version), disabled, or a 503. */
async function stillActive(
  env: Env,
  channel: WebhookChannel,
  kept: EventConnection,
): Promise<EventConnection | 'disabled'> {
  const lookup = await connectionById(env, channel.name as ConnectionChannel, kept.id)
  try {
    const { record } = usableConnection(channel.name, lookup, `replay of ${kept.id}`)
    return { id: record.id, version: record.version }
  } catch (err) {
    if (err instanceof ForbiddenError) return 'disabled'
    throw err
  }
}

function still(reason: string): UnrecognizedReplayAnswer {
  return { outcome: 'unrecognized', decisions: [], reason }
}
