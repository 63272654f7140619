/**
 * The spool queue's consumer: the batch's events go to the origin in one signed request
 * (`POST /v1/events/batch`, ingested in one statement), each answered on its own; then, per
 * message:
 *   origin took it (2xx, new or duplicate)   ack; its claim becomes `done`
 *   origin refused it for good (400/413/422) onto the dead-letter queue at once (retrying cannot
 *                                            help; an operator replays it once the cause is fixed)
 *   origin failed (5xx, timeout, network...) retry with exponential backoff and jitter; after
 *                                            SPOOL_MAX_ATTEMPTS, onto the dead-letter queue
 *                                            with the last error, then ack
 * A message whose event is in R2 (claim-check.ts) has it read back first (R2 failing: retried);
 * its object is deleted once the origin took the event. A dead letter of it carries the same key.
 * @module
 */
import { packBatches } from '../../contract/event-batch'
import type { Settings } from '../config'
import type { Env } from '../env'
import { describeForward, type ForwardResult, forwardBatch, forwardBody } from '../forward'
import { claimStoreFor } from '../gateway'
import { describeError, logLine, logProblem } from '../log'
import { deleteEventBody, eventKeyOf, type Packed, readBack } from './claim-check'
import {
  type DeadMessage,
  deadMessage,
  deadReport,
  decodeSpoolMessage,
  type SpoolMessage,
} from './message'
import { sendDeadLetter } from './producer'
import { countRetried, eachGuarded, retryDelaySeconds, retryReason } from './retries'

/** A queued message read back and valid, ready to forward. */
interface QueuedEvent {
  message: Message<unknown>
  decoded: SpoolMessage
  eventKey: string | null
}

/**
 * The spool queue's batch: each message read back (R2) and decoded, the valid events forwarded
 * together (one signed request: forwardQueued), then each message settled on its own answer.
 */
export async function deliverQueued(
  settings: Settings,
  env: Env,
  ctx: ExecutionContext,
  queue: string,
  messages: readonly Message<unknown>[],
): Promise<void> {
  const read: (QueuedEvent | null)[] = messages.map(() => null)
  await eachGuarded(
    settings,
    queue,
    messages.map((message, index) => ({ message, index })),
    true,
    async ({ message, index }) => {
      read[index] = await readQueued(settings, env, ctx, message)
    },
  )
  const queued = read.filter((item): item is QueuedEvent => item !== null)
  const events = queued.map((item) => JSON.stringify(item.decoded.event))
  const results = await forwardQueued(settings, events)
  const landed: SpoolMessage[] = []
  await eachGuarded(
    settings,
    queue,
    queued.map((item, index) => ({ ...item, result: results[index] as ForwardResult })),
    true,
    async (item) => {
      if (await settleQueued(settings, env, ctx, item, item.result)) landed.push(item.decoded)
    },
  )
  settleLanded(settings, ctx, landed)
}

/**
 * The claims of the events the origin took become `done`, and the stats hash counts them per
 * channel, in one Redis round trip for the whole batch, after the handler returns (waitUntil).
 * Should it fail, a claim stays `spooled` (a replay is still answered as a duplicate) and the
 * backlog gauge reads high until the stats hash is reset (origin/spool-metrics.ts).
 */
function settleLanded(settings: Settings, ctx: ExecutionContext, landed: SpoolMessage[]): void {
  const claims = claimStoreFor(settings)
  if (!claims || landed.length === 0) return
  const counts: Record<string, number> = {}
  for (const { event } of landed) {
    const field = `spool_delivered:${event.channel}`
    counts[field] = (counts[field] ?? 0) + 1
  }
  const items = landed.map(({ claimKey, event, ttlSeconds }) => ({
    key: claimKey,
    hash: event.payloadHash,
    ttlSeconds,
  }))
  ctx.waitUntil(claims.deliveredAll(items, counts).catch(() => {}))
}

/** The message's event, or null when it went to the dead letters (unreadable, not an event). */
async function readQueued(
  settings: Settings,
  env: Env,
  ctx: ExecutionContext,
  message: Message<unknown>,
): Promise<QueuedEvent | null> {
  const bodies = env.SPOOL_BODIES ?? null
  const { body, eventKey, unreadable } = await readBack(
    bodies,
    message.body,
    settings.originTimeoutMs,
  )
  const decoded = decodeSpoolMessage(body)
  if (decoded.ok) return { message, decoded: decoded.message, eventKey }
  if (unreadable?.code === 'event_body_missing' && (await landedAlready(settings, body))) {
    // Queues deliver at least once: this one again after its ack, its object deleted then.
    message.ack()
    logLine('info', 'spool_redelivered_after_done', { attempts: message.attempts })
    return null
  }
  const why = `unreadable message: ${unreadable?.message ?? decoded.reason}`
  await deadLetter(env, settings, ctx, message, why)
  return null
}

/**
 * The queued events forwarded in batches (BATCH_LIMITS), one answer each, in order. A batch
 * refused as a whole (a proxy's body limit, a WAF's rule hit by one event) is sent event by
 * event: the others land, and only the refused one is retried.
 */
async function forwardQueued(settings: Settings, events: string[]): Promise<ForwardResult[]> {
  const { origin, originTimeoutMs } = settings
  if (!origin) return events.map(() => ({ kind: 'failed', status: null, reason: 'network' }))
  const answers: ForwardResult[] = []
  for (const batch of packBatches(events)) {
    const sent = await forwardBatch(origin, batch, originTimeoutMs)
    if (sent.kind === 'answered') answers.push(...sent.results)
    else if (sent.kind === 'failed') answers.push(...batch.map(() => sent))
    else {
      const each = batch.map((event) =>
        forwardBody(origin, event, originTimeoutMs, '/v1/events', 'queue'),
      )
      answers.push(...(await Promise.all(each)))
    }
  }
  return answers
}

/**
 * What the origin's answer (or its absence) makes of one queued message. True when the origin
 * took it: its claim is then settled with the batch's ({@link settleLanded}).
 */
async function settleQueued(
  settings: Settings,
  env: Env,
  ctx: ExecutionContext,
  { message, decoded, eventKey }: QueuedEvent,
  result: ForwardResult,
): Promise<boolean> {
  const { event, queuedAt } = decoded
  const fields = {
    channel: event.channel,
    deliveryKey: event.deliveryKey,
    attempts: message.attempts,
    ageMs: Date.now() - queuedAt,
  }
  const claims = claimStoreFor(settings)
  const later = (work: Promise<unknown> | undefined) => {
    if (work) ctx.waitUntil(work.catch(() => {}))
  }

  if (result.kind === 'accepted') {
    message.ack()
    later(deleteEventBody(env.SPOOL_BODIES ?? null, eventKey))
    logLine('info', 'spool_delivered', {
      ...fields,
      origin: result.outcome ?? String(result.status),
    })
    return true
  }
  if (result.kind === 'permanent') {
    // Retrying cannot help, but the vendor was told "ok": keep it where an operator replays it
    // once the cause is fixed (an origin rolled back to an older schema, a refused value).
    logProblem('error', 'spool_rejected', { ...fields, origin: describeForward(result) })
    await deadLetter(env, settings, ctx, message, `origin refused it: ${describeForward(result)}`)
    return false
  }
  const error = settings.origin ? describeForward(result) : 'origin not configured'
  if (message.attempts >= settings.spool.maxAttempts) {
    await deadLetter(env, settings, ctx, message, `origin ${error}`)
    return false
  }
  const delaySeconds = retryDelaySeconds(settings, message.attempts)
  message.retry({ delaySeconds })
  later(claims?.count(`spool_retried:${event.channel}`))
  countRetried(settings, event.channel, retryReason(result))
  logProblem('warn', 'spool_retry', { ...fields, origin: error, delaySeconds })
  return false
}

/**
 * Whether a message's claim says its event landed (`done`: the origin took it, live or from this
 * queue). Not known (no Redis, no claim, Redis failing): false, and the message is dead-lettered
 * as unreadable: a spurious failure row at worst, never a dropped event.
 */
async function landedAlready(settings: Settings, body: unknown): Promise<boolean> {
  const claimKey = (body as { claimKey?: unknown } | null)?.claimKey
  const claims = claimStoreFor(settings)
  if (!claims || typeof claimKey !== 'string') return false
  try {
    const claim = await claims.inspect(claimKey)
    return claim?.status === 'settled' && claim.state === 'done'
  } catch {
    return false
  }
}

/**
 * Out of attempts (or unreadable): onto the dead-letter queue with why, then acked. An event in
 * R2 stays there, the dead letter carrying its key. If that send fails the message stays here,
 * retried at the longest delay; Cloudflare's own `max_retries` moves it to the same dead-letter
 * queue in the end.
 */
async function deadLetter(
  env: Env,
  settings: Settings,
  ctx: ExecutionContext,
  message: Message<unknown>,
  error: string,
): Promise<void> {
  const body = (message.body ?? {}) as Record<string, unknown>
  const eventKey = eventKeyOf(body)
  const queued = {
    claimKey: typeof body.claimKey === 'string' ? body.claimKey : '',
    queuedAt: typeof body.queuedAt === 'number' ? body.queuedAt : 0,
  }
  const dead: Packed<DeadMessage> = eventKey
    ? {
        ...deadMessage({ ...queued, event: null }, message.attempts, error),
        event: undefined,
        eventKey,
      }
    : deadMessage({ ...queued, event: body.event ?? null }, message.attempts, error)
  const report = deadReport(dead, message.attempts, message.id)
  const fields = { channel: report.channel, deliveryKey: report.deliveryKey }
  try {
    await sendDeadLetter(env.SPOOL_DEAD, env.SPOOL_BODIES ?? null, dead, settings.originTimeoutMs)
  } catch (err) {
    logProblem('error', 'spool_dead_letter_failed', { ...fields, error: describeError(err) })
    message.retry({ delaySeconds: settings.spool.retryMaxSeconds })
    countRetried(settings, report.channel || 'unknown', 'dead_letter_failed')
    return
  }
  message.ack()
  const claims = claimStoreFor(settings)
  if (claims) ctx.waitUntil(claims.count(`spool_dead:${report.channel}`).catch(() => {}))
  logProblem('error', 'spool_dead_lettered', { ...fields, attempts: message.attempts, error })
}
