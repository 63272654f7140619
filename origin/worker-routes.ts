/**
 * The Worker's signed routes of the origin: `POST /v1/events` (one normalized event),
 * `/v1/events/batch` (the spool consumer's queue batch), `/v1/failures/inbound` (a dead letter),
 * `/v1/decisions` (the isolates' decision counts) and `/v1/signature-bindings`. Each bounds its
 * body and verifies the signature over the raw text (origin/forward-auth.ts) before anything parses
 * it, and answers signed (answerJson), its errors too (the origin's onError, origin/app.ts). Any
 * 2xx means the origin took responsibility for the event; a duplicate is a 200, never an error.
 * @module
 */
import { type Context, Hono } from 'hono'
import * as v from 'valibot'
import { DECISION_MSG, type DecisionLog, decisionLevel } from '../contract/decision-log'
import {
  type InboundEvent,
  type IngestResult,
  jsonBytes,
  parseInboundEvent,
} from '../contract/event'
import { BATCH_LIMITS, type BatchItemAnswer } from '../contract/event-batch'
import type { ForwardRoute } from '../contract/forward-signature'
import { storable } from '../contract/storable'
import { parseDecisionBatch, recordDecisionBatch } from './console/decisions'
import { recordPayloadMismatch } from './console/mismatches'
import type { Database } from './db'
import {
  BodyTooLargeError,
  describeError,
  InternalError,
  InvalidEventError,
  OriginError,
} from './errors'
import { recordInboundFailure } from './failures/inbound'
import { answerJson, type ForwardAuthDeps, type ForwardEnv, verifiedBody } from './forward-auth'
import { ingestEvent, ingestEvents } from './ingest'
import type { Logger } from './log'
import { countGatewayDecisions, type OriginMetrics, seriesOf } from './metrics'
import { bindSignature, parseSignatureBinding } from './signature-bindings'

export interface WorkerRouteDeps extends ForwardAuthDeps {
  db: Database
  metrics: OriginMetrics
  /** One event's bound, alone or as a batch's item (MAX_EVENT_BYTES). */
  maxEventBytes: number
}

const EVENTS: ForwardRoute = { method: 'POST', path: '/v1/events' }
const EVENTS_BATCH: ForwardRoute = { method: 'POST', path: '/v1/events/batch' }
const INBOUND_FAILURES: ForwardRoute = { method: 'POST', path: '/v1/failures/inbound' }
const DECISIONS: ForwardRoute = { method: 'POST', path: '/v1/decisions' }
const SIGNATURE_BINDINGS: ForwardRoute = { method: 'POST', path: '/v1/signature-bindings' }

export function workerRoutes(deps: WorkerRouteDeps): Hono<ForwardEnv> {
  const { db, logger, metrics } = deps
  const routes = new Hono<ForwardEnv>()
  const signedBody = (c: Context<ForwardEnv>, route: ForwardRoute, maxBytes = deps.maxEventBytes) =>
    verifiedBody(deps, c, route, maxBytes)

  routes.post('/v1/events', async (c) => {
    const event = parseEvent(await signedBody(c, EVENTS))
    const started = performance.now()
    // The Worker hangs up at its forward budget; from then on nobody waits for this work.
    const result = await ingestEvent(db.withSignal(c.req.raw.signal), event)
    const durationMs = performance.now() - started
    record(metrics, logger, event, result, durationMs)
    if (result.payloadMismatch) {
      // For the console's mismatch list; the answer does not wait for it, nor fail with it.
      recordPayloadMismatch(db, event, result).catch((err: unknown) =>
        logger.warn('payload mismatch not recorded', describeError(err)),
      )
    }
    return answerJson(c, result, result.outcome === 'created' ? 201 : 200)
  })

  // The Worker isolates' decision counts (worker/decision-counters.ts), for the console.
  routes.post('/v1/decisions', async (c) => {
    const batch = parseDecisionBatch(parseJson(await signedBody(c, DECISIONS)))
    if (await recordDecisionBatch(db, batch)) countGatewayDecisions(metrics, batch.rows)
    return answerJson(c, { ok: true }, 200)
  })

  // A one-time signature bound to its first body (worker/signature-once.ts), beside Redis's copy.
  routes.post('/v1/signature-bindings', async (c) => {
    const binding = parseSignatureBinding(parseJson(await signedBody(c, SIGNATURE_BINDINGS)))
    return answerJson(c, { binding: await bindSignature(db, binding) }, 200)
  })

  // The spool consumer's queue batch: one statement for all, an answer per event (200 as a whole).
  routes.post('/v1/events/batch', async (c) => {
    const items = parseBatch(await signedBody(c, EVENTS_BATCH, BATCH_LIMITS.bytes))
    const parsed = items.map((item) => parseBatchItem(item, deps.maxEventBytes))
    const events = parsed.filter((item): item is InboundEvent => !(item instanceof Error))
    const started = performance.now()
    const results = await ingestEvents(db.withSignal(c.req.raw.signal), events)
    const eachMs = (performance.now() - started) / Math.max(events.length, 1)
    let next = 0
    const answers = parsed.map((item): BatchItemAnswer => {
      if (item instanceof Error) return errorAnswer(item)
      const result = results[next++] as IngestResult | Error
      if (result instanceof Error) return errorAnswer(result, logger)
      record(metrics, logger, item, result, eachMs)
      return { status: result.outcome === 'created' ? 201 : 200, ...result }
    })
    return answerJson(c, { results: answers }, 200)
  })

  // The Worker's dead-letter consumer: an event the spool queue gave up on, kept for replay.
  routes.post('/v1/failures/inbound', async (c) => {
    const report = parseDeadEvent(await signedBody(c, INBOUND_FAILURES))
    const id = await recordInboundFailure(db, { ...report, source: 'queue' })
    seriesOf(metrics, report.channel).inboundDead.labels(report.channel).inc()
    logger.error('inbound event dead', {
      failureId: id,
      channel: report.channel,
      deliveryKey: report.deliveryKey,
      attempts: report.attempts,
      error: report.error,
    })
    return answerJson(c, { failureId: id }, 201)
  })

  return routes
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw)
  } catch {
    throw new InvalidEventError('invalid event: body is not JSON')
  }
}

/** A batch's items, not yet validated: each is valid or not on its own. */
function parseBatch(raw: string): unknown[] {
  const parsed = parseJson(raw) as { events?: unknown } | null
  const events = parsed && typeof parsed === 'object' ? parsed.events : undefined
  if (!Array.isArray(events) || events.length > BATCH_LIMITS.events) {
    throw new InvalidEventError(`invalid batch: {events: [...]}, at most ${BATCH_LIMITS.events}`)
  }
  return events
}

/** One item of a batch as `POST /v1/events` would take it alone, or the error it would answer. */
function parseBatchItem(item: unknown, maxEventBytes: number): InboundEvent | OriginError {
  if (jsonBytes(item) > maxEventBytes) return new BodyTooLargeError(maxEventBytes)
  const parsed = parseInboundEvent(item)
  return parsed.ok ? parsed.event : new InvalidEventError(parsed.message)
}

/** An event's error inside a batch answer, as onError answers it for a single event. */
function errorAnswer(err: Error, logger?: Logger): BatchItemAnswer {
  const known = err instanceof OriginError ? err : new InternalError({ cause: err })
  if (logger && known instanceof InternalError)
    logger.error('batch event failed', describeError(err))
  return { status: known.status, error: { code: known.code, message: known.message } }
}

function parseEvent(raw: string): InboundEvent {
  const parsed = parseInboundEvent(parseJson(raw))
  if (!parsed.ok) throw new InvalidEventError(parsed.message)
  return parsed.event
}

/**
 * What the dead-letter consumer reports. The event itself is kept as it came, valid or not (only
 * made storable: jsonb holds no NUL or lone surrogate either): it is evidence for the operator,
 * and the replay validates it again.
 */
const DeadEventReport = v.strictObject({
  channel: v.pipe(v.string(), v.minLength(1), v.maxLength(32)),
  deliveryKey: v.pipe(v.string(), v.minLength(1), v.maxLength(512)),
  event: v.record(v.string(), v.unknown()),
  error: v.pipe(v.string(), v.maxLength(10_000)),
  attempts: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1_000_000)),
})

function parseDeadEvent(raw: string): v.InferOutput<typeof DeadEventReport> {
  const parsed = v.safeParse(DeadEventReport, storable(parseJson(raw)))
  if (!parsed.success) throw new InvalidEventError('invalid dead-letter report')
  return parsed.output
}

/** One log line and the counters for each decision. Keys and ids only: never the body. */
function record(
  metrics: OriginMetrics,
  logger: Logger,
  event: InboundEvent,
  result: IngestResult,
  durationMs: number,
): void {
  const { channel } = event
  seriesOf(metrics, channel)
  metrics.events.labels(channel, result.outcome).inc()
  metrics.ingestSeconds.labels(channel).observe(durationMs / 1000)
  if (result.duplicate) metrics.dbDuplicates.labels(channel).inc()
  if (result.payloadMismatch) metrics.payloadMismatches.labels(channel).inc()
  const line: DecisionLog = {
    component: 'origin',
    channel,
    kind: event.kind,
    decision: result.outcome,
    decidedBy: 'postgres',
    deliveryKey: event.deliveryKey,
    messageKey: event.messageKey,
    messageId: result.messageId,
    ms: Math.round(durationMs * 10) / 10,
    ...(result.payloadMismatch ? { payloadMismatch: true } : {}),
  }
  // A mismatch is worth a look (a vendor bug or a forged replay), so it logs at warn.
  logger[decisionLevel(line)](DECISION_MSG, { ...line })
}
