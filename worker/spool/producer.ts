/**
 * Putting an event on the spool queue, when the origin could not take it. Independent of Redis:
 * with the origin and Redis both down the event is still queued, and Postgres decides later.
 * A send that fails or does not answer in time is "not queued": the caller releases the claim
 * and gives the vendor its retry answer (a send that did land after all is then delivered twice,
 * which the origin's unique index turns into one row).
 * @module
 */
import type { InboundEvent } from '../../contract/event'
import { describeError, logProblem } from '../log'
import {
  type DeadMessage,
  MAX_SPOOL_MESSAGE_BYTES,
  messageBytes,
  type SpoolMessage,
  spoolMessage,
} from './message'

export type SpoolQueue = Pick<Queue<SpoolMessage>, 'send'>
export type DeadLetterQueue = Pick<Queue<DeadMessage>, 'send'>

export type EnqueueResult =
  | { status: 'queued' }
  | {
      status: 'not_queued'
      reason: 'spool_off' | 'spool_not_bound' | 'spool_message_too_large' | 'spool_unavailable'
    }

export interface EnqueueOptions {
  queue: SpoolQueue | null
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
  const bytes = messageBytes(message)
  const fields = { channel: event.channel, deliveryKey: event.deliveryKey }
  if (bytes > MAX_SPOOL_MESSAGE_BYTES) {
    logProblem('error', 'spool_message_too_large', {
      ...fields,
      bytes,
      limit: MAX_SPOOL_MESSAGE_BYTES,
    })
    return { status: 'not_queued', reason: 'spool_message_too_large' }
  }
  try {
    await withTimeout(options.queue.send(message, { contentType: 'json' }), options.timeoutMs)
    return { status: 'queued' }
  } catch (err) {
    logProblem('error', 'spool_unavailable', { ...fields, error: describeError(err) })
    return { status: 'not_queued', reason: 'spool_unavailable' }
  }
}

/**
 * Puts a dead message on the dead-letter queue (its consumer records it in channel_failures), within
 * `timeoutMs`. Throws when there is no binding, the send fails or takes too long.
 */
export async function sendDeadLetter(
  queue: DeadLetterQueue | null | undefined,
  message: DeadMessage,
  timeoutMs: number,
): Promise<void> {
  if (!queue) throw new Error('SPOOL_DEAD is not bound')
  await withTimeout(queue.send(message, { contentType: 'json' }), timeoutMs)
}

/** The binding has no timeout of its own; the vendor's deadline does. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`queue send took over ${ms} ms`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
