/**
 * Where the delivery core (deliver.ts) puts an event the origin does not take now: on the spool
 * queue (worker/spool/), or, refused by the origin for good, on the dead-letter queue.
 * @module
 */
import type { Finished } from '../claims'
import type { InboundEvent } from '../contract/event'
import type { DeliveryKey } from './channels/types'
import { formatDeliveryKey } from './channels/types'
import { type DeliveryContext, sendBudgetMs } from './delivery-context'
import { describeError, logProblem, type WorkerDecisionLog } from './log'
import type { Outcome } from './outcome'
import { deadMessage } from './spool/message'
import { enqueueEvent, sendDeadLetter } from './spool/producer'

/** What is known of a forward before the origin answers. */
export type KnownFields = Pick<
  WorkerDecisionLog,
  'channel' | 'deliveryKey' | 'fallbackKey' | 'redis' | 'reason'
>

/** The reason of a refused event answered "retry": its dead letter could not be sent. */
export const NOT_RECORDED = 'refused_event_not_recorded'

/**
 * A refused event (by the origin, or, in a batch, by the event schema) as a dead letter, through
 * R2 when too large for a queue message. False when it could not be sent (no binding, the queue
 * or R2 failing): then it is nowhere durable, and the caller asks the vendor to send it again.
 */
export async function recordRefused(
  ctx: DeliveryContext,
  key: DeliveryKey,
  event: InboundEvent,
  why: string,
): Promise<boolean> {
  const dead = deadMessage(
    { claimKey: formatDeliveryKey(key), queuedAt: Date.now(), event },
    1,
    why,
  )
  try {
    await sendDeadLetter(ctx.deadLetters, ctx.bodies, dead, sendBudgetMs(ctx))
    return true
  } catch (err) {
    logProblem('error', NOT_RECORDED, {
      channel: event.channel,
      deliveryKey: event.deliveryKey,
      error: describeError(err),
    })
    return false
  }
}

/** Whether this event could go to the spool queue: its channel spooled and a queue bound. */
export function canQueue(ctx: DeliveryContext, event: InboundEvent): boolean {
  return ctx.spool !== null && ctx.settings.spool.channels.has(event.channel)
}

/**
 * Whether this event goes to the spool queue before any forward (QUEUE_FIRST_CHANNELS): its
 * channel queued first, and the queue there to take it.
 */
export function queuesFirst(ctx: DeliveryContext, event: InboundEvent): boolean {
  return canQueue(ctx, event) && ctx.settings.spool.firstChannels.has(event.channel)
}

/**
 * The event on the spool queue, the claim to become `spooled`: the sender is told "ok" and the
 * queue consumer forwards it once the origin is back (or takes it: a shed event). That needs no
 * Redis: with Redis down too the event is queued, and Postgres decides later. When it cannot be
 * queued (the channel is not spooled, no queue bound, the queue or R2 refused) the claim is
 * released and the sender asked to retry (`reason` then says why), which Slack, Telegram and mail
 * servers do and Twilio does not.
 */
export async function queueEvent(
  ctx: DeliveryContext,
  key: DeliveryKey,
  event: InboundEvent,
  fields: KnownFields & Pick<WorkerDecisionLog, 'origin'>,
): Promise<Finished<Outcome>> {
  const queued = await enqueueEvent(
    {
      queue: ctx.spool,
      bodies: ctx.bodies,
      enabled: ctx.settings.spool.channels.has(event.channel),
      timeoutMs: sendBudgetMs(ctx),
      ttlSeconds: ctx.dedupTtlSeconds,
    },
    formatDeliveryKey(key),
    event,
  )
  if (queued.status === 'queued') {
    // Counted with the claim's settle, in its round trip (claims/run-claimed.ts).
    const count = `spool_queued:${event.channel}`
    return {
      result: { ...fields, decision: 'spooled', decidedBy: 'gateway' },
      end: 'spooled',
      count,
    }
  }
  const outcome: Outcome = {
    ...fields,
    decision: 'retry',
    decidedBy: 'gateway',
    reason: queued.reason,
  }
  return { result: outcome, end: 'release' }
}
