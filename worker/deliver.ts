/**
 * What happens to one verified, parsed, classified delivery: claim in Redis, forward to the
 * origin, queue it when the origin cannot take it. The same for every channel and every front
 * door: the core answers with an {@link Outcome}, and each front door (the webhook routes, the
 * email handler) turns it into its own reply (an HTTP status, or SMTP's accept / temporary error /
 * bounce) and logs it with that reply's status ({@link logOutcome}).
 * @module
 */
import { type ClaimHold, type Finished, runClaimed } from '../claims'
import { finalizeEvent, type InboundEvent, parseInboundEvent } from '../contract/event'
import { sha256Hex } from '../shared/crypto'
import type { Delivery, DeliveryKey } from './channels/types'
import { formatDeliveryKey } from './channels/types'
import {
  canQueue,
  type KnownFields,
  NOT_RECORDED,
  queueEvent,
  queuesFirst,
  recordRefused,
} from './deliver-spool'
import type { DeliveryContext } from './delivery-context'
import { InvalidPayloadError } from './errors'
import { describeForward, type ForwardResult, forwardEvent } from './forward'
import { describeError, type WorkerDecisionLog } from './log'
import type { Outcome } from './outcome'
import type { Admission } from './shed/breaker'
import { keepUnrecognized } from './unrecognized'

export {
  connectionFields,
  type DeliveryContext,
  deliveryContext,
  type FrontDoor,
  type LogTarget,
  logOutcome,
} from './delivery-context'
export type { Outcome } from './outcome'

/** Below this much time left, a forward is not worth starting: answer "retry" instead. */
const MIN_FORWARD_MS = 200

export async function deliver(
  ctx: DeliveryContext,
  delivery: Delivery,
  rawBody: string,
): Promise<Outcome> {
  switch (delivery.action) {
    case 'challenge':
      return { decision: 'challenge', decidedBy: 'gateway', challenge: delivery.challenge }
    case 'ignore':
      return { decision: 'ignored', decidedBy: 'gateway', reason: delivery.reason }
    case 'record':
      return record(ctx, delivery.key, delivery.material ?? rawBody)
    case 'unrecognized':
      return keepUnrecognized(ctx, delivery)
  }
  const event = await finalizeEvent(delivery.draft)
  const valid = parseInboundEvent(event)
  if (!valid.ok) throw new InvalidPayloadError(valid.message)
  return deliverEvent(ctx, delivery.key, valid.event)
}

async function record(ctx: DeliveryContext, key: DeliveryKey, material: string): Promise<Outcome> {
  const deliveryKey = formatDeliveryKey(key)
  if (!ctx.claims) {
    return { deliveryKey, decision: 'recorded', decidedBy: 'gateway', redis: 'not_configured' }
  }
  const hash = (await sha256Hex(material)).slice(0, 16)
  const claimed = await ctx.claims.record(deliveryKey, hash, ctx.dedupTtlSeconds)
  if (claimed.status === 'unavailable') {
    return { deliveryKey, decision: 'recorded', decidedBy: 'gateway', redis: 'unavailable' }
  }
  const decision = claimed.status === 'claimed' ? 'recorded' : 'duplicate'
  return { deliveryKey, decision, decidedBy: 'redis', redis: 'ok' }
}

/**
 * One valid event: claim → shed or forward → queue. A front door that builds its event itself
 * (the API, whose request is its own parse) enters here; one that holds the claim already
 * (`ctx.heldClaim`) is not claimed again.
 */
export async function deliverEvent(
  ctx: DeliveryContext,
  key: DeliveryKey,
  event: InboundEvent,
): Promise<Outcome> {
  const { claims, settings } = ctx
  const base = { channel: event.channel, deliveryKey: event.deliveryKey, fallbackKey: key.fallback }
  if (ctx.heldClaim) {
    // The front door ends its claim from the reply it gives (the API: 202 spooled, 2xx done);
    // what a settle would have counted is counted here.
    const finished = await forwardAndDecide(ctx, key, event, ctx.heldClaim, base)
    if (finished.count && claims) ctx.waitUntil(claims.count(finished.count).catch(() => {}))
    return finished.result
  }
  return runClaimed<Outcome>(
    claims,
    {
      key: formatDeliveryKey(key),
      hash: event.payloadHash,
      ttlSeconds: ctx.dedupTtlSeconds,
      // Another attempt holds it (Slack retries while a slow first attempt runs): wait briefly.
      waitUntilMs: Math.min(
        Date.now() + settings.inflightWaitMs,
        ctx.deadline - settings.redisTimeoutMs - MIN_FORWARD_MS,
      ),
      // The sender's answer need not wait for `done`; a replay meanwhile finds inflight and polls.
      later: (work) => ctx.waitUntil(work),
      // A release goes before the answer when the deadline allows (the sender's immediate retry
      // can then claim at once), else after it: a retry meanwhile waits for the key to go.
      releaseNow: () => ctx.deadline - Date.now() >= settings.redisTimeoutMs,
    },
    {
      settled({ payloadMismatch, from, storedHash }) {
        if (payloadMismatch && claims) {
          ctx.waitUntil(claims.count(`payload_mismatch:${event.channel}`).catch(() => {}))
        }
        // Both hashes of a mismatch go with the decision (the log line, the console's sample).
        const hashes = payloadMismatch
          ? { storedHash: storedHash ?? undefined, offeredHash: event.payloadHash }
          : {}
        return {
          ...base,
          decision: 'duplicate',
          decidedBy: from,
          redis: 'ok',
          payloadMismatch,
          ...hashes,
        }
      },
      inflight: () => ({
        ...base,
        decision: 'retry',
        decidedBy: 'redis',
        redis: 'ok',
        reason: 'inflight',
      }),
      run: (hold) => forwardAndDecide(ctx, key, event, hold, base),
    },
  )
}

/**
 * The forward, what it decides, and how the claim ends. Without a claim (Redis down, slow or not
 * configured) this is failing open: the origin's Postgres unique index decides.
 */
async function forwardAndDecide(
  ctx: DeliveryContext,
  key: DeliveryKey,
  event: InboundEvent,
  hold: ClaimHold,
  base: Pick<WorkerDecisionLog, 'channel' | 'deliveryKey' | 'fallbackKey'>,
): Promise<Finished<Outcome>> {
  const redis = hold.redis === 'inflight' ? 'ok' : hold.redis
  const reason = hold.redis === 'unavailable' ? describeError(hold.error) : undefined
  const fields: KnownFields = { ...base, redis, reason }
  if (queuesFirst(ctx, event)) {
    // Queued first by configuration: answered once queued, stored by the consumer in a batch.
    // Should the queue refuse it, it is forwarded as it would be without the setting.
    const first = await queueEvent(ctx, key, event, { ...fields, reason: 'queue_first' })
    if (first.end === 'spooled') return first
  }
  const admission = canQueue(ctx, event) ? ctx.breaker.admit() : null
  if (admission && !admission.forward) {
    // The origin is not keeping up (see worker/shed/breaker.ts): queue it without waiting.
    const shed = await queueEvent(ctx, key, event, { ...fields, reason: admission.reason })
    if (shed.end === 'spooled') return shed
  }
  const forwarded = await forwardOrQueue(ctx, key, event, fields, admission)
  if ('queued' in forwarded) return forwarded.queued
  const { result } = forwarded
  if (result.kind === 'accepted') {
    // An `api` event's stored answer, replayed: the message was there already.
    const duplicate = result.duplicate || result.answer?.replayed === true
    const outcome: Outcome = {
      ...fields,
      decision: duplicate ? 'duplicate' : 'forwarded',
      decidedBy: duplicate || redis !== 'ok' ? 'postgres' : 'redis',
      origin: result.outcome ?? String(result.status),
      payloadMismatch: result.payloadMismatch,
      ...(result.answer ? { answer: result.answer } : {}),
    }
    return { result: outcome, end: 'done' }
  }
  if (result.kind === 'permanent') {
    // The origin refused the event itself (400 / 413 / 422): retrying cannot help, so the front
    // door stops the vendor's retries; the event goes to the dead letters (channel_failures),
    // where an operator replays it once the cause is fixed. The log says so at error level.
    // Never "ok" for an event kept nowhere: without its dead letter the vendor is asked again.
    const origin = describeForward(result)
    const kept = await recordRefused(ctx, key, event, `origin refused it: ${origin}`)
    const outcome: Outcome = kept
      ? { ...fields, decision: 'rejected', decidedBy: 'postgres', origin }
      : { ...fields, decision: 'retry', decidedBy: 'gateway', origin, reason: NOT_RECORDED }
    return { result: outcome, end: 'release' }
  }
  // The origin could not take it now (5xx, timeout, network, or a configuration 4xx).
  return queueEvent(ctx, key, event, { ...fields, origin: describeForward(result) })
}

/**
 * The forward, waited for at most the admission's `waitMs` (shedding on: SHED_SLOW_MS). Past that
 * the origin is slow: the event goes to the queue and the vendor is answered, while the forward
 * runs on in the background (should it land, the queued copy is a duplicate). Should the queue
 * refuse it, the forward is waited for after all, within its own budget: a slow origin never
 * turns into a retry answer that waiting would have spared. The breaker hears how it went once.
 */
async function forwardOrQueue(
  ctx: DeliveryContext,
  key: DeliveryKey,
  event: InboundEvent,
  fields: KnownFields,
  admission: Admission | null,
): Promise<{ result: ForwardResult } | { queued: Finished<Outcome> }> {
  const started = Date.now()
  const report = (ok: boolean) => {
    if (admission?.forward) admission.done({ ms: Date.now() - started, ok })
  }
  const forwarding = forwardWithinBudget(ctx, event)
  const waitMs = admission?.forward ? admission.waitMs : Number.POSITIVE_INFINITY
  const first = await within(forwarding, waitMs)
  if (first !== STILL_WAITING) {
    report(first.kind !== 'failed')
    return { result: first }
  }
  report(false)
  const queued = await queueEvent(ctx, key, event, { ...fields, reason: 'shed_slow' })
  if (queued.end === 'spooled') {
    ctx.waitUntil(forwarding.catch(() => {}))
    return { queued }
  }
  return { result: await forwarding }
}

const STILL_WAITING = Symbol('still waiting')

/** The promise's value if it settles within `ms`, else STILL_WAITING (the promise runs on). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof STILL_WAITING> {
  if (!Number.isFinite(ms)) return promise
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<typeof STILL_WAITING>((resolve) => {
    timer = setTimeout(() => resolve(STILL_WAITING), ms)
  })
  try {
    return await Promise.race([promise, expired])
  } finally {
    clearTimeout(timer)
  }
}

/** Forwards with what is left of the sender's deadline (keeping room to release the claim). */
async function forwardWithinBudget(
  ctx: DeliveryContext,
  event: InboundEvent,
): Promise<ForwardResult> {
  const left = ctx.deadline - Date.now() - ctx.settings.redisTimeoutMs
  const timeoutMs = Math.min(ctx.settings.originTimeoutMs, left)
  if (timeoutMs < MIN_FORWARD_MS) return { kind: 'failed', status: null, reason: 'timeout' }
  return forwardEvent(ctx.origin, event, timeoutMs)
}
