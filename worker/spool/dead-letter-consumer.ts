/**
 * The dead-letter queue's consumer: each message recorded in Postgres through the origin's signed
 * `POST /v1/failures/inbound` (channel_failures, stage inbound), retried until the origin takes
 * it. An event in R2 (claim-check.ts) is read back into the report (the row keeps it whole, for
 * the replay), and its object goes once the origin recorded it; an object that cannot be read is
 * said so in the row's error.
 * @module
 */
import { backoffMs } from '../../shared/backoff'
import type { OriginConfig, Settings } from '../config'
import type { Env } from '../env'
import { describeForward, type ForwardResult, forwardBody } from '../forward'
import { logProblem } from '../log'
import { deleteEventBody, eventKeyOf, readBack } from './claim-check'
import { deadReport } from './message'

/**
 * Retries of a dead-letter report: from 30 s up to 6 hours. With the consumer's 100 retries that
 * outlasts the queue's longest retention (14 days): the origin may be down for long.
 */
const DEAD_REPORT_BACKOFF = { baseMs: 30_000, maxMs: 6 * 3_600_000 }

/** A dead-letter message becomes a channel_failures row, through the origin, or waits. */
export async function recordDead(
  settings: Settings,
  env: Env,
  ctx: ExecutionContext,
  message: Message<unknown>,
): Promise<void> {
  const bodies = env.SPOOL_BODIES ?? null
  const { body, eventKey, unreadable } = await readBack(
    bodies,
    message.body,
    settings.originTimeoutMs,
  )
  const report = deadReport(body, message.attempts, message.id)
  if (unreadable) report.error += `; ${unreadable.message} (${eventKeyOf(message.body)})`
  const fields = { channel: report.channel, deliveryKey: report.deliveryKey }
  const result: ForwardResult = settings.origin
    ? await postReport(settings.origin, JSON.stringify(report), settings.originTimeoutMs)
    : { kind: 'failed', status: null, reason: 'network' }
  if (result.kind === 'accepted') {
    message.ack()
    ctx.waitUntil(deleteEventBody(bodies, eventKey).catch(() => {}))
    logProblem('error', 'spool_dead_recorded', { ...fields, attempts: report.attempts })
    return
  }
  // A refusal (400) is a bug in one of the two sides; keep the message and say so loudly.
  const delaySeconds = Math.round(
    backoffMs(DEAD_REPORT_BACKOFF, message.attempts, Math.random()) / 1000,
  )
  message.retry({ delaySeconds })
  logProblem(result.kind === 'permanent' ? 'error' : 'warn', 'spool_dead_record_retry', {
    ...fields,
    origin: describeForward(result),
    delaySeconds,
  })
}

function postReport(origin: OriginConfig, body: string, timeoutMs: number) {
  return forwardBody(origin, body, timeoutMs, '/v1/failures/inbound', 'queue')
}
