/**
 * What happens to one verified, parsed, classified delivery: claim in Redis, forward to the
 * origin, answer the vendor, log one decision. The same for every channel; a channel brings only
 * its replies (what "got it" and "try again" look like to that vendor) and its response budget.
 * @module
 */
import { sha256Hex } from '../contract/crypto'
import { finalizeEvent, type InboundEvent, parseInboundEvent } from '../contract/event'
import type { ChannelDelivery, DeliveryKey } from './channels/types'
import { formatDeliveryKey } from './channels/types'
import type { OriginConfig, Settings } from './config'
import type { ClaimOutcome, ClaimStore } from './dedup/claims'
import { newClaimToken } from './dedup/claims'
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
  const outcome = await ctx.claims.record(redisKey(ctx, key), hash)
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
  const { claims } = ctx
  const deliveryKey = event.deliveryKey
  const base = { channel: event.channel, deliveryKey, fallbackKey: key.fallback }
  if (!claims) return forwardUnclaimed(ctx, key, event, 'not_configured', base)

  const rkey = redisKey(ctx, key)
  const token = newClaimToken()
  let outcome: ClaimOutcome = await claims.claim(rkey, token, event.payloadHash)
  if (outcome.status === 'inflight') {
    // Another attempt holds it (Slack retries while a slow first attempt runs). Not a 200 that
    // could hide its failure: wait briefly for its outcome, taking over if it lets go.
    const waitUntil = Math.min(
      Date.now() + ctx.settings.inflightWaitMs,
      ctx.deadline - ctx.settings.redisTimeoutMs - MIN_FORWARD_MS,
    )
    outcome = await claims.waitWhileInflight(rkey, token, event.payloadHash, waitUntil)
  }

  switch (outcome.status) {
    case 'settled': {
      const payloadMismatch = outcome.hash !== null && outcome.hash !== event.payloadHash
      if (payloadMismatch) ctx.waitUntil(claims.countPayloadMismatch(event.channel).catch(() => {}))
      log(ctx, {
        ...base,
        decision: 'duplicate',
        decidedBy: 'redis',
        status: 200,
        redis: 'ok',
        payloadMismatch,
      })
      return ctx.replies.ok()
    }
    case 'inflight':
      log(ctx, {
        ...base,
        decision: 'retry',
        decidedBy: 'redis',
        status: 503,
        redis: 'ok',
        reason: 'inflight',
      })
      return ctx.replies.retryLater()
    case 'unavailable':
      return forwardUnclaimed(ctx, key, event, 'unavailable', base, {
        key,
        rkey,
        token,
        error: outcome.error,
      })
    case 'claimed':
      break
  }

  const result = await forwardWithinBudget(ctx, event)
  if (result.kind === 'accepted') {
    // The vendor's answer need not wait for this; a replay meanwhile finds inflight and polls.
    ctx.waitUntil(claims.complete(rkey, token, event.payloadHash).catch(() => {}))
    log(ctx, {
      ...base,
      decision: result.duplicate ? 'duplicate' : 'forwarded',
      decidedBy: result.duplicate ? 'postgres' : 'redis',
      status: 200,
      redis: 'ok',
      origin: result.outcome ?? String(result.status),
      payloadMismatch: result.payloadMismatch,
    })
    return ctx.replies.ok()
  }
  if (result.kind === 'permanent') {
    await releaseQuietly(claims, rkey, token, event.payloadHash)
    return onOriginRejected(ctx, result, { ...base, redis: 'ok' })
  }
  return onOriginFailure(ctx, key, event, result, { ...base, redis: 'ok' }, { key, rkey, token })
}

/**
 * Fail open: no claim could be taken (Redis down, slow, or not configured), so forward anyway and
 * let the origin's Postgres unique index decide. When Redis was only slow, our SET may still have
 * landed: complete / release with our token then, best effort, so the key does not sit in flight.
 */
async function forwardUnclaimed(
  ctx: DeliveryContext,
  key: DeliveryKey,
  event: InboundEvent,
  redis: 'unavailable' | 'not_configured',
  base: Pick<DecisionLog, 'channel' | 'deliveryKey' | 'fallbackKey'>,
  claim?: HeldClaim & { error: unknown },
): Promise<Response> {
  const reason = claim ? describeError(claim.error) : undefined
  const result = await forwardWithinBudget(ctx, event)
  if (result.kind === 'accepted') {
    if (claim && ctx.claims) {
      ctx.waitUntil(ctx.claims.complete(claim.rkey, claim.token, event.payloadHash).catch(() => {}))
    }
    log(ctx, {
      ...base,
      decision: result.duplicate ? 'duplicate' : 'forwarded',
      decidedBy: 'postgres',
      status: 200,
      redis,
      origin: result.outcome ?? String(result.status),
      payloadMismatch: result.payloadMismatch,
      reason,
    })
    return ctx.replies.ok()
  }
  if (result.kind === 'permanent') {
    if (claim && ctx.claims)
      await releaseQuietly(ctx.claims, claim.rkey, claim.token, event.payloadHash)
    return onOriginRejected(ctx, result, { ...base, redis, reason })
  }
  // Redis was slow or down for the claim: the queue takes the event all the same; the claim, if
  // our SET landed after all, is marked spooled or released like any other.
  return onOriginFailure(ctx, key, event, result, { ...base, redis, reason }, claim ?? null)
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

/** A claim this attempt took (or tried to take, when Redis did not answer in time). */
interface HeldClaim {
  key: DeliveryKey
  rkey: string
  token: string
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
  held: HeldClaim | null,
): Promise<Response> {
  const origin = result.status === null ? result.reason : String(result.status)
  const claimKey = formatDeliveryKey(key)
  const timeoutMs = Math.max(ctx.deadline - Date.now() - ctx.settings.redisTimeoutMs, MIN_SEND_MS)
  const queued = await enqueueEvent(
    { queue: ctx.spool, enabled: ctx.settings.spool.channels.has(event.channel), timeoutMs },
    claimKey,
    event,
  )
  const { claims } = ctx
  if (queued.status === 'queued') {
    if (held && claims) {
      // After the answer: a vendor retry meanwhile finds the key in flight and waits for it.
      ctx.waitUntil(
        Promise.all([
          claims.complete(held.rkey, held.token, event.payloadHash, 'spooled'),
          claims.count(`spool_queued:${event.channel}`),
        ]).catch(() => {}),
      )
    }
    log(ctx, { ...fields, decision: 'spooled', decidedBy: 'gateway', status: 200, origin })
    return ctx.replies.ok()
  }
  if (held && claims) {
    const release = releaseQuietly(claims, held.rkey, held.token, event.payloadHash)
    // Before the answer when the vendor's deadline allows (its immediate retry can then claim at
    // once), else after it: a retry meanwhile finds the key in flight and waits for it to go.
    if (ctx.deadline - Date.now() >= ctx.settings.redisTimeoutMs) await release
    else ctx.waitUntil(release)
  }
  log(ctx, {
    ...fields,
    decision: 'retry',
    decidedBy: 'gateway',
    status: 503,
    origin,
    reason: queued.reason,
  })
  return ctx.replies.retryLater()
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

async function releaseQuietly(claims: ClaimStore, rkey: string, token: string, hash: string) {
  // A release that fails leaves the key until its lease ends; the vendor's retry then waits or
  // gets another 503, which is safe. Bounded by the Redis timeout like every call.
  await claims.release(rkey, token, hash).catch(() => false)
}

function redisKey(ctx: DeliveryContext, key: DeliveryKey): string {
  return `${ctx.settings.redisKeyPrefix}${formatDeliveryKey(key)}`
}

/** A decision's fields; `channel` defaults to the route's (an event names sms / whatsapp). */
type LogEntry = Omit<DecisionLog, 'channel' | 'ms'> & { channel?: string }
type LogFields = Omit<LogEntry, 'decision' | 'decidedBy' | 'status'>

function log(ctx: DeliveryContext, entry: LogEntry): void {
  logDecision({ ...entry, channel: entry.channel ?? ctx.channel, ms: Date.now() - ctx.startedAt })
}
