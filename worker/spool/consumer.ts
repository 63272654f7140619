/**
 * The Worker's `queue()` handler: the consumers of the spool queue and of its dead-letter queue
 * (wrangler.toml). Every message is decided on its own answer, so a poisoned event is retried on
 * its own schedule while everything behind it lands.
 *
 * Spool queue: the batch's events go to the origin in one signed request (`POST /v1/events/batch`,
 * ingested in one statement), each answered on its own; then, per message:
 *   origin took it (2xx, new or duplicate)   ack; its claim becomes `done`
 *   origin refused it for good (400/413/422) onto the dead-letter queue at once (retrying cannot
 *                                            help; an operator replays it once the cause is fixed)
 *   origin failed (5xx, timeout, network...) retry with exponential backoff and jitter; after
 *                                            SPOOL_MAX_ATTEMPTS, onto the dead-letter queue
 *                                            with the last error, then ack
 * Dead-letter queue, per message: recorded in Postgres through the origin's signed
 * `POST /v1/failures/inbound` (channel_failures, stage inbound), retried until the origin takes it.
 *
 * A message whose event is in R2 (claim-check.ts: too large for a queue message) has it read back
 * first (R2 failing: retried); its object is deleted once the origin took the event, or recorded
 * its dead letter, whose report carries the event whole. A dead letter of it carries the same key.
 *
 * The handler never throws: locally a throwing `queue()` redelivers the whole batch, acked
 * messages included. Each message is acked or retried explicitly.
 *
 * Each spool message given back to the queue is counted (decision `retried`, decided by the
 * gateway, the failure's kind as reason) in the isolate's decision counters: the console's
 * "retried (last hour)". They are held, not flushed on the interval's timer (a queue batch ends
 * with its `waitUntil` work); every batch, of either queue, sends what the isolate holds when a
 * flush is due.
 * @module
 */
import { backoffMs } from '../../contract/backoff'
import { SPOOL_RETRIED } from '../../contract/decision-counts'
import { packBatches } from '../../contract/event-batch'
import { type OriginConfig, type Settings, settingsFor } from '../config'
import { flushIfDue, flushTargetOf, holdDecision } from '../decision-counters'
import type { Env } from '../env'
import { describeForward, type ForwardResult, forwardBatch, forwardBody } from '../forward'
import { claimStoreFor } from '../gateway'
import { describeError, logLine, logProblem } from '../log'
import {
  ClaimCheckError,
  type ClaimCheckErrorCode,
  deleteEventBody,
  type EventBodies,
  eventKeyOf,
  type Packed,
  unpackMessage,
} from './claim-check'
import {
  type DeadMessage,
  deadMessage,
  deadReport,
  decodeSpoolMessage,
  type SpoolMessage,
} from './message'
import { sendDeadLetter } from './producer'

/** A dead-letter queue's name ends with this (wrangler.toml: `dead_letter_queue`). */
export const DEAD_LETTER_SUFFIX = '-dead'

/**
 * Retries of a dead-letter report: from 30 s up to 6 hours. With the consumer's 100 retries that
 * outlasts the queue's longest retention (14 days): the origin may be down for long.
 */
const DEAD_REPORT_BACKOFF = { baseMs: 30_000, maxMs: 6 * 3_600_000 }

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

/**
 * Runs `handle` for each item at once. A throw (a bug, R2 failing: not an answer) keeps that
 * item's message, on the normal schedule, counted as a spool retry when `countsRetries` (the
 * spool's messages; the dead-letter queue's are reports, not events).
 */
async function eachGuarded<T extends { message: Message<unknown> }>(
  settings: Settings,
  queue: string,
  items: readonly T[],
  countsRetries: boolean,
  handle: (item: T) => Promise<void>,
): Promise<void> {
  await Promise.all(
    items.map(async (item) => {
      try {
        await handle(item)
      } catch (err) {
        logProblem('error', 'spool_consumer_error', { queue, error: describeError(err) })
        item.message.retry({ delaySeconds: retryDelaySeconds(settings, item.message.attempts) })
        if (countsRetries) countRetried(settings, channelOf(item.message.body), 'consumer_error')
      }
    }),
  )
}

/**
 * A spool message given back to its queue, counted in this isolate's decision counters (a map
 * update; sent by {@link flushIfDue} at the end of a batch, at most once per interval).
 */
function countRetried(settings: Settings, channel: string, reason: string): void {
  holdDecision(settings, { channel, decision: SPOOL_RETRIED, decidedBy: 'gateway', reason })
}

/** Why the origin failed a queued event, as a code the console groups by (`origin_503`, ...). */
function retryReason(result: Extract<ForwardResult, { kind: 'failed' }>): string {
  return result.reason === 'status' && result.status !== null
    ? `origin_${result.status}`
    : `origin_${result.reason}`
}

/** A queued message's channel, as far as it can be read (an unreadable one has none). */
function channelOf(body: unknown): string {
  const event = (body as { event?: { channel?: unknown } } | null)?.event
  return typeof event?.channel === 'string' && event.channel ? event.channel : 'unknown'
}

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
async function deliverQueued(
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
  await eachGuarded(
    settings,
    queue,
    queued.map((item, index) => ({ ...item, result: results[index] as ForwardResult })),
    true,
    (item) => settleQueued(settings, env, ctx, item, item.result),
  )
}

/** The message's event, or null when it went to the dead letters (unreadable, not an event). */
async function readQueued(
  settings: Settings,
  env: Env,
  ctx: ExecutionContext,
  message: Message<unknown>,
): Promise<QueuedEvent | null> {
  const { body, eventKey, unreadable } = await readBack(settings, env.SPOOL_BODIES ?? null, message)
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
 * The queued events forwarded in batches (BATCH_LIMITS), one answer each, in order. An origin
 * that takes no batch (older than the batch route) gets each on its own.
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

/** What the origin's answer (or its absence) makes of one queued message. */
async function settleQueued(
  settings: Settings,
  env: Env,
  ctx: ExecutionContext,
  { message, decoded, eventKey }: QueuedEvent,
  result: ForwardResult,
): Promise<void> {
  const { event, claimKey, queuedAt, ttlSeconds } = decoded
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
    later(claims?.delivered(claimKey, event.payloadHash, ttlSeconds))
    later(claims?.count(`spool_delivered:${event.channel}`))
    later(deleteEventBody(env.SPOOL_BODIES ?? null, eventKey))
    logLine('info', 'spool_delivered', {
      ...fields,
      origin: result.outcome ?? String(result.status),
    })
    return
  }
  if (result.kind === 'permanent') {
    // Retrying cannot help, but the vendor was told "ok": keep it where an operator replays it
    // once the cause is fixed (an origin rolled back to an older schema, a refused value).
    logProblem('error', 'spool_rejected', { ...fields, origin: describeForward(result) })
    return deadLetter(env, settings, ctx, message, `origin refused it: ${describeForward(result)}`)
  }
  const error = settings.origin ? describeForward(result) : 'origin not configured'
  if (message.attempts >= settings.spool.maxAttempts) {
    return deadLetter(env, settings, ctx, message, `origin ${error}`)
  }
  const delaySeconds = retryDelaySeconds(settings, message.attempts)
  message.retry({ delaySeconds })
  later(claims?.count(`spool_retried:${event.channel}`))
  countRetried(settings, event.channel, retryReason(result))
  logProblem('warn', 'spool_retry', { ...fields, origin: error, delaySeconds })
}

/**
 * The message with its event read back from R2 (claim-check.ts), and its key. An object that is
 * gone (expired, deleted by hand) or not one of ours (too large) leaves the message as it is
 * (`unreadable` says why): the spool consumer dead-letters it as unreadable (unless its claim says
 * it landed already: a message delivered again after its ack), the dead-letter consumer records
 * it with what is known. R2 failing or unbound throws: the message is retried on the normal
 * schedule ({@link consumeQueue}).
 */
async function readBack(
  settings: Settings,
  bodies: EventBodies | null,
  message: Message<unknown>,
): Promise<{
  body: unknown
  eventKey: string | null
  unreadable: { code: ClaimCheckErrorCode; message: string } | null
}> {
  try {
    const unpacked = await unpackMessage(bodies, message.body, settings.originTimeoutMs)
    return { ...unpacked, unreadable: null }
  } catch (err) {
    if (!(err instanceof ClaimCheckError) || err.code === 'bodies_not_bound') throw err
    const unreadable = { code: err.code, message: `its event in R2: ${err.message}` }
    return { body: message.body, eventKey: null, unreadable }
  }
}

/**
 * Whether a message's claim says its event landed (`done`: the origin took it, live or from this
 * queue). Not known (no Redis, no claim, Redis failing): false, and the message is dead-lettered
 * as unreadable, as before: a spurious failure row at worst, never a dropped event.
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

/**
 * A dead-letter message becomes a channel_failures row, through the origin, or waits. An event in
 * R2 is read back into the report (the row keeps it whole, for the replay), and its object goes
 * once the origin recorded it; an object that cannot be read is said so in the row's error.
 */
async function recordDead(
  settings: Settings,
  env: Env,
  ctx: ExecutionContext,
  message: Message<unknown>,
): Promise<void> {
  const bodies = env.SPOOL_BODIES ?? null
  const { body, eventKey, unreadable } = await readBack(settings, bodies, message)
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

/** The wait before the next attempt after `attempts` failed ones (SPOOL_RETRY_*). */
export function retryDelaySeconds(settings: Settings, attempts: number, random = Math.random()) {
  const { retryBaseSeconds, retryMaxSeconds } = settings.spool
  const ms = backoffMs(
    { baseMs: retryBaseSeconds * 1000, maxMs: retryMaxSeconds * 1000 },
    attempts,
    random,
  )
  return Math.round(ms / 1000)
}
