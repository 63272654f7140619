/**
 * The origin's HTTP API (Hono). `POST /v1/events` takes one normalized event from the worker:
 * bound the body, verify the signature over the raw text, then parse, validate and ingest. Any 2xx
 * means the origin took responsibility for the event; a duplicate is a 200, never an error.
 * @module
 */
import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { type InboundEvent, type IngestResult, parseInboundEvent } from '../contract/event'
import { SIGNATURE_HEADER, TIMESTAMP_HEADER, verifyForward } from '../contract/forward-signature'
import type { Database } from './db'
import {
  BodyTooLargeError,
  ClientGoneError,
  DatabaseUnavailableError,
  describeError,
  InternalError,
  InvalidEventError,
  NotFoundError,
  OriginError,
  UnauthorizedError,
} from './errors'
import { ingestEvent } from './ingest'
import type { Logger } from './log'
import { createMetrics, type OriginMetrics } from './metrics'

export interface OriginDeps {
  db: Database
  /** ORIGIN_SHARED_SECRET as a list: every entry verifies (rotation). */
  secrets: readonly string[]
  maxEventBytes: number
  logger: Logger
  /** @default a fresh registry per app */
  metrics?: OriginMetrics
  /** Clock in unix seconds, for the signature's freshness window. @default Date.now */
  nowSeconds?: () => number
}

export function createOriginApp(deps: OriginDeps): Hono {
  const { db, logger } = deps
  const metrics = deps.metrics ?? createMetrics()
  const nowSeconds = deps.nowSeconds ?? (() => Math.floor(Date.now() / 1000))
  const app = new Hono()

  app.post(
    '/v1/events',
    // Content-Length is checked before reading; a chunked body is counted while it streams.
    bodyLimit({
      maxSize: deps.maxEventBytes,
      onError: () => {
        throw new BodyTooLargeError(deps.maxEventBytes)
      },
    }),
    async (c) => {
      const raw = await c.req.text()
      // Verify the exact bytes first; nothing is parsed for an unauthenticated caller.
      const verdict = await verifyForward(
        deps.secrets,
        raw,
        { timestamp: c.req.header(TIMESTAMP_HEADER), signature: c.req.header(SIGNATURE_HEADER) },
        nowSeconds(),
      )
      if (!verdict.ok) {
        logger.warn('request rejected', { reason: verdict.reason })
        throw new UnauthorizedError()
      }
      const event = parseEvent(raw)
      const started = performance.now()
      // The Worker hangs up at its forward budget; from then on nobody waits for this work.
      const result = await ingestEvent(db.withSignal(c.req.raw.signal), event)
      const durationMs = performance.now() - started
      record(metrics, logger, event, result, durationMs)
      return c.json(result, result.outcome === 'created' ? 201 : 200)
    },
  )

  app.get('/healthz', async (c) => {
    try {
      await db.ping()
      return c.json({ ok: true })
    } catch (err) {
      logger.warn('health check failed', describeError(err))
      const { code, message } = new DatabaseUnavailableError()
      return c.json({ ok: false, error: { code, message } }, 503)
    }
  })

  app.get('/metrics', async (c) => {
    const text = await metrics.registry.metrics()
    return c.body(text, 200, { 'content-type': metrics.registry.contentType })
  })

  app.notFound((c) => {
    const { code, message, status } = new NotFoundError()
    return c.json({ error: { code, message } }, status)
  })

  // The one place errors become responses. Unknown errors are logged and answered opaquely.
  app.onError((err, c) => {
    const known = err instanceof OriginError ? err : new InternalError({ cause: err })
    if (known instanceof DatabaseUnavailableError) {
      logger.warn('database unavailable', describeError(known.cause))
    } else if (known instanceof ClientGoneError) {
      logger.info('request abandoned: the client closed it, its work stopped')
    } else if (known instanceof InternalError) {
      logger.error('request failed', describeError(err))
    }
    metrics.rejected.labels(known.code).inc()
    return c.json({ error: { code: known.code, message: known.message } }, known.status)
  })

  return app
}

function parseEvent(raw: string): InboundEvent {
  let json: unknown
  try {
    json = JSON.parse(raw)
  } catch {
    throw new InvalidEventError('invalid event: body is not JSON')
  }
  const parsed = parseInboundEvent(json)
  if (!parsed.ok) throw new InvalidEventError(parsed.message)
  return parsed.event
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
  metrics.events.labels(channel, result.outcome).inc()
  metrics.ingestSeconds.labels(channel).observe(durationMs / 1000)
  if (result.duplicate) metrics.dbDuplicates.labels(channel).inc()
  if (result.payloadMismatch) metrics.payloadMismatches.labels(channel).inc()
  const line = {
    channel,
    kind: event.kind,
    outcome: result.outcome,
    decidedBy: 'postgres',
    deliveryKey: event.deliveryKey,
    messageKey: event.messageKey,
    messageId: result.messageId,
    durationMs: Math.round(durationMs * 10) / 10,
    ...(result.payloadMismatch ? { payloadMismatch: true } : {}),
  }
  // A mismatch is worth a look (a vendor bug or a forged replay), so it logs at warn.
  if (result.payloadMismatch) logger.warn('event', line)
  else logger.info('event', line)
}
