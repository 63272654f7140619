/**
 * What happens to one verified, parsed, classified delivery: claim in Redis, forward to the
 * origin, answer the vendor, log one decision. The same for every channel; a channel brings only
 * its replies (what "got it" and "try again" look like to that vendor) and its response budget.
 * @module
 */
import { type ClaimEnd, type ClaimHold, type ClaimStore, runClaimed } from '../claims'
import { sha256Hex } from '../contract/crypto'
import { finalizeEvent, type InboundEvent, parseInboundEvent } from '../contract/event'
import type { ChannelDelivery, DeliveryKey } from './channels/types'
import { formatDeliveryKey } from './channels/types'
import type { OriginConfig, Settings } from './config'
import { InvalidPayloadError } from './errors'
import { type ForwardResult, forwardEvent } from './forward'
import { type DecisionLog, describeError, logDecision } from './log'
import { enqueueEvent, type SpoolQueue } from './spool/producer'

export interface ChannelReplies {
  /** "Got it, do not send again." */
  ok(): Response
  /** "Not taken; send it again." Slack and Telegram retry on it; Twilio does not (issue 5's spool). */
  retryLater(): Response
  /**
   * "Refused for good": the origin will never accept this event. @default ok(), which stops the
   * vendor's retries; email answers a permanent SMTP error instead (`setReject`).
   */
  rejected?(): Response
}

export interface DeliveryContext {
  /** Log label of the route: slack | twilio | telegram. */
  channel: string
  settings: Settings
  origin: OriginConfig
  /** Null when no Redis is configured: Postgres decides everything. */
  claims: ClaimStore | null
  /** The spool queue's producer binding; null when the Worker has none. */
  spool: SpoolQueue | null
  replies: ChannelReplies
  waitUntil(promise: Promise<unknown>): void
  startedAt: number
  /** Epoch ms by which the vendor must have its answer (Slack: 3 s, less a margin). */
  deadline: number
}

/** Below this much time left, a forward is not worth starting: answer "retry" instead. */
const MIN_FORWARD_MS = 200
/** A queue send gets at least this long, even past the vendor's deadline (Slack then retries). */
const MIN_SEND_MS = 500

export async function handleDelivery(
  ctx: DeliveryContext,
  delivery: ChannelDelivery,
  rawBody: string,
): Promise<Response> {
  if (delivery.action === 'ignore') {
    log(ctx, { decision: 'ignored', decidedBy: 'gateway', status: 200, reason: delivery.reason })
    return ctx.replies.ok()
  }
  if (delivery.action === 'record') return record(ctx, delivery.key, rawBody)

  const event = await finalizeEvent(delivery.draft)
  const valid = parseInboundEvent(event)
  if (!valid.ok) throw new InvalidPayloadError(valid.message)
  return claimAndForward(ctx, delivery.key, valid.event)
}

async function record(ctx: DeliveryContext, key: DeliveryKey, rawBody: string): Promise<Response> {
  const deliveryKey = formatDeliveryKey(key)
  if (!ctx.claims) {
    log(ctx, {
      deliveryKey,
      decision: 'recorded',
      decidedBy: 'gateway',
      status: 200,
      redis: 'not_configured',
    })
    return ctx.replies.ok()
  }
  const hash = (await sha256Hex(rawBody)).slice(0, 16)
  const outcome = await ctx.claims.record(deliveryKey, hash)
  const redis = outcome.status === 'unavailable' ? 'unavailable' : 'ok'
  const decision =
    outcome.status === 'claimed' || redis === 'unavailable' ? 'recorded' : 'duplicate'
  log(ctx, {
    deliveryKey,
    decision,
    decidedBy: redis === 'ok' ? 'redis' : 'gateway',
    status: 200,
    redis,
  })
  return ctx.replies.ok()
}

async function claimAndForward(
  ctx: DeliveryContext,
  key: DeliveryKey,
  event: InboundEvent,
): Promise<Response> {
  const { claims, settings } = ctx
  const base = { channel: event.channel, deliveryKey: event.deliveryKey, fallbackKey: key.fallback }
  return runClaimed<Response>(
    claims,
    {
      key: formatDeliveryKey(key),
      hash: event.payloadHash,
      // Another attempt holds it (Slack retries while a slow first attempt runs): wait briefly.
      waitUntilMs: Math.min(
        Date.now() + settings.inflightWaitMs,
        ctx.deadline - settings.redisTimeoutMs - MIN_FORWARD_MS,
      ),
      // The vendor's answer need not wait for `done`; a replay meanwhile finds inflight and polls.
      later: (work) => ctx.waitUntil(work),
      // A release goes before the answer when the deadline allows (the vendor's immediate retry
      // can then claim at once), else after it: a retry meanwhile waits for the key to go.
      releaseNow: () => ctx.deadline - Date.now() >= settings.redisTimeoutMs,
    },
    {
      settled({ payloadMismatch }) {
        if (payloadMismatch && claims) {
          ctx.waitUntil(claims.count(`payload_mismatch:${event.channel}`).catch(() => {}))
        }
        log(ctx, {
          ...base,
          decision: 'duplicate',
          decidedBy: 'redis',
          status: 200,
          redis: 'ok',
          payloadMismatch,
        })
        return ctx.replies.ok()
      },
      inflight() {
        log(ctx, {
          ...base,
          decision: 'retry',
          decidedBy: 'redis',
          status: 503,
          redis: 'ok',
          reason: 'inflight',
        })
        return ctx.replies.retryLater()
      },
      run: (hold) => forwardAndAnswer(ctx, key, event, hold, base),
    },
  )
}

/**
 * The forward and the vendor's answer, and how the claim ends. Without a claim (Redis down, slow
 * or not configured) this is failing open: the origin's Postgres unique index decides.
 */
async function forwardAndAnswer(
  ctx: DeliveryContext,
  key: DeliveryKey,
  event: InboundEvent,
  hold: ClaimHold,
  base: Pick<DecisionLog, 'channel' | 'deliveryKey' | 'fallbackKey'>,
): Promise<{ result: Response; end: ClaimEnd }> {
  const redis = hold.redis === 'inflight' ? 'ok' : hold.redis
  const reason = hold.redis === 'unavailable' ? describeError(hold.error) : undefined
  const fields: LogFields = { ...base, redis, reason }
  const result = await forwardWithinBudget(ctx, event)
  if (result.kind === 'accepted') {
    log(ctx, {
      ...fields,
      decision: result.duplicate ? 'duplicate' : 'forwarded',
      decidedBy: result.duplicate || redis !== 'ok' ? 'postgres' : 'redis',
      status: 200,
      origin: result.outcome ?? String(result.status),
      payloadMismatch: result.payloadMismatch,
    })
    return { result: ctx.replies.ok(), end: 'done' }
  }
  if (result.kind === 'permanent') {
    return { result: onOriginRejected(ctx, result, fields), end: 'release' }
  }
  return onOriginFailure(ctx, key, event, result, fields)
}

/** Forwards with what is left of the vendor's deadline (keeping room to release the claim). */
async function forwardWithinBudget(
  ctx: DeliveryContext,
  event: InboundEvent,
): Promise<ForwardResult> {
  const left = ctx.deadline - Date.now() - ctx.settings.redisTimeoutMs
  const timeoutMs = Math.min(ctx.settings.originTimeoutMs, left)
  if (timeoutMs < MIN_FORWARD_MS) return { kind: 'failed', status: null, reason: 'timeout' }
  return forwardEvent(ctx.origin, event, timeoutMs)
}

/**
 * The origin could not take the event now (5xx, timeout, network, or a configuration 4xx). Put it
 * on the spool queue (worker/spool/), mark the claim `spooled` and answer "ok": the queue consumer
 * forwards it once the origin is back. That needs no Redis: with Redis down too the event is
 * queued, and Postgres decides later. When it cannot be queued (the channel is not spooled, no
 * queue bound, too large for a queue message, the queue refused) the claim is released and the
 * vendor asked to retry, which Slack, Telegram and mail servers do and Twilio does not.
 */
async function onOriginFailure(
  ctx: DeliveryContext,
  key: DeliveryKey,
  event: InboundEvent,
  result: Extract<ForwardResult, { kind: 'failed' }>,
  fields: LogFields,
): Promise<{ result: Response; end: ClaimEnd }> {
  const origin = result.status === null ? result.reason : String(result.status)
  const timeoutMs = Math.max(ctx.deadline - Date.now() - ctx.settings.redisTimeoutMs, MIN_SEND_MS)
  const queued = await enqueueEvent(
    { queue: ctx.spool, enabled: ctx.settings.spool.channels.has(event.channel), timeoutMs },
    formatDeliveryKey(key),
    event,
  )
  if (queued.status === 'queued') {
    if (ctx.claims) ctx.waitUntil(ctx.claims.count(`spool_queued:${event.channel}`).catch(() => {}))
    log(ctx, { ...fields, decision: 'spooled', decidedBy: 'gateway', status: 200, origin })
    return { result: ctx.replies.ok(), end: 'spooled' }
  }
  log(ctx, {
    ...fields,
    decision: 'retry',
    decidedBy: 'gateway',
    status: 503,
    origin,
    reason: queued.reason,
  })
  return { result: ctx.replies.retryLater(), end: 'release' }
}

/**
 * The origin refused the event itself (400 / 413 / 422): it will never be accepted, so the vendor
 * gets its "ok" (a retry loop helps no one and counts against the app's health with Slack), or the
 * channel's `rejected` reply, and the log says so at error level, with the origin's error code.
 */
function onOriginRejected(
  ctx: DeliveryContext,
  result: Extract<ForwardResult, { kind: 'permanent' }>,
  fields: LogFields,
): Response {
  const reply = ctx.replies.rejected ? ctx.replies.rejected() : ctx.replies.ok()
  log(ctx, {
    ...fields,
    decision: 'rejected',
    decidedBy: 'postgres',
    status: reply.status,
    origin: `${result.status} ${result.code ?? ''}`.trim(),
  })
  return reply
}

/** A decision's fields; `channel` defaults to the route's (an event names sms / whatsapp). */
type LogEntry = Omit<DecisionLog, 'channel' | 'ms'> & { channel?: string }
type LogFields = Omit<LogEntry, 'decision' | 'decidedBy' | 'status'>

function log(ctx: DeliveryContext, entry: LogEntry): void {
  logDecision({ ...entry, channel: entry.channel ?? ctx.channel, ms: Date.now() - ctx.startedAt })
}
