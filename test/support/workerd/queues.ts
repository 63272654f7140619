/**
 * Queue producer bindings that keep what they were sent (or refuse it, like a queue that is down),
 * and a harness with the spool queue and its dead-letter queue bound to two of them.
 * @module
 */
import type { Env } from '../../../worker/env'
import type { DeadMessage, SpoolMessage } from '../../../worker/spool/message'
import { type Harness, harness } from './harness'

export class RecordingQueue<T = unknown> {
  readonly sent: T[] = []
  constructor(private readonly refuse = false) {}
  async send(message: T): Promise<void> {
    if (this.refuse) throw new Error('Queue send failed: Unknown Internal Error (15000)')
    this.sent.push(structuredClone(message))
  }
}

/** A harness whose SPOOL and SPOOL_DEAD record what is sent (the spool refusing, if asked). */
export function withQueues(
  overrides: Partial<Env> = {},
  refuse = false,
): { h: Harness; spool: RecordingQueue<SpoolMessage>; dead: RecordingQueue<DeadMessage> } {
  const spool = new RecordingQueue<SpoolMessage>(refuse)
  const dead = new RecordingQueue<DeadMessage>()
  const h = harness({
    SPOOL: spool as unknown as Env['SPOOL'],
    SPOOL_DEAD: dead as unknown as Env['SPOOL_DEAD'],
    ...overrides,
  })
  return { h, spool, dead }
}
