/**
 * The Worker's `queue()` handler: each batch goes to the consumer of its queue (wrangler.toml),
 * the spool queue's (spool-consumer.ts: each event to the origin, acked, retried or dead-lettered
 * on its own answer) or its dead-letter queue's (dead-letter-consumer.ts: each recorded in
 * Postgres through the origin). Every message is decided on its own answer, so a poisoned event is
 * retried on its own schedule while everything behind it lands.
 *
 * The handler never throws: locally a throwing `queue()` redelivers the whole batch, acked
 * messages included. Each message is acked or retried explicitly (retries.ts, `eachGuarded`).
 *
 * Every batch, of either queue, sends the decision counts the isolate holds (retries.ts) when a
 * flush is due.
 * @module
 */
import { settingsFor } from '../config'
import { flushIfDue, flushTargetOf } from '../decision-counters'
import type { Env } from '../env'
import { recordDead } from './dead-letter-consumer'
import { eachGuarded } from './retries'
import { deliverQueued } from './spool-consumer'

/** A dead-letter queue's name ends with this (wrangler.toml: `dead_letter_queue`). */
export const DEAD_LETTER_SUFFIX = '-dead'

export function isDeadLetterQueue(queueName: string): boolean {
  return queueName.endsWith(DEAD_LETTER_SUFFIX)
}

export async function consumeQueue(
  batch: MessageBatch<unknown>,
  env: Env,
  ctx: ExecutionContext,
): Promise<void> {
  const settings = settingsFor(env)
  if (isDeadLetterQueue(batch.queue)) {
    const each = batch.messages.map((message) => ({ message }))
    await eachGuarded(settings, batch.queue, each, false, ({ message }) =>
      recordDead(settings, env, ctx, message),
    )
  } else {
    await deliverQueued(settings, env, ctx, batch.queue, batch.messages)
  }
  // Retries counted while the origin was down could not be sent then; a batch that runs may find
  // it back, and nothing else in this isolate may count again soon. Never a sleeping flush here:
  // the batch would wait for it (decision-counters.ts).
  flushIfDue(flushTargetOf(settings, (promise) => ctx.waitUntil(promise)))
}
