/**
 * Putting an event on the spool queue, when the origin could not take it. Independent of Redis:
 * with the origin and Redis both down the event is still queued, and Postgres decides later.
 * An event too large for a queue message goes through R2 (claim-check.ts). A send that fails or
 * does not answer in time is "not queued": the caller releases the claim and gives the vendor its
 * retry answer (a send that did land after all is then delivered twice, which the origin's unique
 * index turns into one row).
 * @module
 */
import type { InboundEvent } from '../../contract/event'
import { describeError, logProblem } from '../log'
import { ClaimCheckError, type EventBodies, type Packed, packMessage } from './claim-check'
import { type DeadMessage, type SpoolMessage, spoolMessage } from './message'
import { withTimeout } from './timeout'

export type SpoolQueue = Pick<Queue<Packed<SpoolMessage>>, 'send'>
export type DeadLetterQueue = Pick<Queue<Packed<DeadMessage>>, 'send'>

export type EnqueueResult =
  | { status: 'queued' }
  | {
      status: 'not_queued'
      reason: 'spool_off' | 'spool_not_bound' | 'spool_message_too_large' | 'spool_unavailable'
    }

export interface EnqueueOptions {
  queue: SpoolQueue | null
  /** Where an event too large for a queue message waits (SPOOL_BODIES); null when unbound. */
  bodies: EventBodies | null
  /** The channel is spooled at all (SPOOL_CHANNELS). */
  enabled: boolean
  timeoutMs: number
  /** The claim's dedup TTL, carried in the message for the consumer. */
  ttlSeconds?: number
}

export async function enqueueEvent(
  options: EnqueueOptions,
  claimKey: string,
  event: InboundEvent,
): Promise<EnqueueResult> {
  if (!options.enabled) return { status: 'not_queued', reason: 'spool_off' }
  if (!options.queue) return { status: 'not_queued', reason: 'spool_not_bound' }
  const message = spoolMessage(claimKey, event, options.ttlSeconds)
  try {
    await sendPacked(options.queue, options.bodies, message, options.timeoutMs)
    return { status: 'queued' }
  } catch (err) {
    const tooLarge = err instanceof ClaimCheckError
    const reason = tooLarge ? 'spool_message_too_large' : 'spool_unavailable'
    const fields = { channel: event.channel, deliveryKey: event.deliveryKey }
    logProblem('error', reason, { ...fields, error: describeError(err) })
    return { status: 'not_queued', reason }
  }
}

/**
 * Puts a dead message on the dead-letter queue (its consumer records it in channel_failures),
 * through R2 when too large, within `timeoutMs`. Throws when there is no binding, or the put or
 * send fails or takes too long.
 */
export async function sendDeadLetter(
  queue: DeadLetterQueue | null | undefined,
  bodies: EventBodies | null,
  message: Packed<DeadMessage>,
  timeoutMs: number,
): Promise<void> {
  if (!queue) throw new Error('SPOOL_DEAD is not bound')
  await sendPacked(queue, bodies, message, timeoutMs)
}

/**
 * One message onto a queue, its event through R2 when too large. Both steps share `timeoutMs`. A
 * send that fails after the put leaves the object to the bucket's lifecycle rule: a send that
 * timed out may still have landed, and its consumer will need the object.
 */
async function sendPacked<M extends { event: unknown }>(
  queue: Pick<Queue<Packed<M>>, 'send'>,
  bodies: EventBodies | null,
  message: Packed<M>,
  timeoutMs: number,
): Promise<void> {
  const until = Date.now() + timeoutMs
  const packed = await packMessage(bodies, message, timeoutMs)
  const left = Math.max(until - Date.now(), 1)
  await withTimeout(queue.send(packed, { contentType: 'json' }), left, 'queue send')
}
