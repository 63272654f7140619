/**
 * Forwards one normalized event to the origin (`POST {ORIGIN_URL}/v1/events`), signed with the
 * first `ORIGIN_SHARED_SECRET` (scheme v2: method, route, time and body), within a timeout,
 * without following redirects, and sorts the answer into three outcomes:
 * - accepted: a 2xx the origin signed (contract/forward-signature.ts). The origin took
 *   responsibility (new row, duplicate, edit applied).
 * - permanent: a signed 400 / 413 / 422. The event itself is bad and will never be accepted;
 *   retrying it forever helps no one.
 * - failed: everything else: 5xx, timeout, network, 408 / 429, the other 4xx (401, 403, 404, ...),
 *   any 3xx (`redirect`), and any answer the origin did not sign (`unsigned_answer`: an SSO wall's
 *   login page, a proxy's page). Those say the path or our configuration is wrong (secret, URL),
 *   not the event: once fixed, a retry succeeds, so they must not drop the message.
 * @module
 */

import * as v from 'valibot'
import type { InboundEvent, IngestOutcome } from '../contract/event'
import { BATCH_LIMITS, type BatchAnswer, batchBody } from '../contract/event-batch'
import {
  ANSWER_SIGNATURE_HEADER,
  type ForwardRoute,
  SIGNATURE_HEADER,
  signForward,
  verifyAnswer,
} from '../contract/forward-signature'
import { type StoredAnswer, StoredAnswerSchema } from '../contract/idempotency'
import { readBoundedBody } from '../shared/body'
import { isRedirect, NO_REDIRECT } from '../shared/no-redirect'
import type { OriginConfig } from './config'

export type ForwardResult =
  | {
      kind: 'accepted'
      status: number
      outcome: IngestOutcome | null
      duplicate: boolean
      payloadMismatch: boolean
      /** An `api` event's answer, stored by the origin for its Idempotency-Key. */
      answer?: StoredAnswer
    }
  | { kind: 'permanent'; status: number; code: string | null }
  | { kind: 'failed'; status: number | null; reason: FailureReason }

/**
 * Why a forward failed: `redirect` a 3xx (never followed), `unsigned_answer` an answer that is not
 * the origin's own (no valid answer signature), `status` any other refusal.
 */
export type FailureReason = 'timeout' | 'network' | 'status' | 'redirect' | 'unsigned_answer'

const PERMANENT_STATUSES = new Set([400, 413, 422])
/** The origin's answers are small JSON objects; never read more than this of one. */
const MAX_ANSWER_BYTES = 16 * 1024

export function forwardEvent(
  origin: OriginConfig,
  event: InboundEvent,
  timeoutMs: number,
): Promise<ForwardResult> {
  return forwardBody(origin, JSON.stringify(event), timeoutMs)
}

/** The origin's routes the Worker calls. */
export type OriginPath =
  | '/v1/events'
  | '/v1/events/batch'
  | '/v1/failures/inbound'
  | '/v1/decisions'
  | '/v1/signature-bindings'

/**
 * Sent by the spool queue's consumers (`x-dedup-via: queue`): an origin's logs, a proxy in front
 * of it (and the soak's nemesis) can tell a queued forward from a live one. Not signed: it only
 * describes, it decides nothing.
 */
export const VIA_HEADER = 'x-dedup-via'

/**
 * POSTs a serialized body to the origin, signed now: the origin refuses signatures older than
 * five minutes, so a queued event is re-signed on every attempt.
 */
export async function forwardBody(
  origin: OriginConfig,
  body: string,
  timeoutMs: number,
  path: OriginPath = '/v1/events',
  via: 'live' | 'queue' = 'live',
): Promise<ForwardResult> {
  const posted = await postSigned(origin, body, timeoutMs, path, via, MAX_ANSWER_BYTES)
  return posted.kind === 'answered' ? sortAnswer(posted.status, posted.json) : posted
}

/**
 * What became of a batch (`POST /v1/events/batch`): an answer per event, in order; the whole batch
 * failed (timeout, network, 5xx, an answer the origin did not sign: each event is retried); or
 * `single`, the batch was refused as a whole (a proxy's body limit, 413; a WAF's 4xx for one
 * event's text): each event goes on its own through {@link forwardBody}, so the one refused
 * does not hold back the others.
 */
export type BatchForwardResult =
  | { kind: 'answered'; results: ForwardResult[] }
  | Extract<ForwardResult, { kind: 'failed' }>
  | { kind: 'single'; status: number | null }

/** A batch answer holds one small object per event. */
const MAX_BATCH_ANSWER_BYTES = BATCH_LIMITS.events * 1024

/** Forwards serialized events (within BATCH_LIMITS) in one signed request, from the spool consumer. */
export async function forwardBatch(
  origin: OriginConfig,
  events: readonly string[],
  timeoutMs: number,
): Promise<BatchForwardResult> {
  const posted = await postSigned(
    origin,
    batchBody(events),
    timeoutMs,
    '/v1/events/batch',
    'queue',
    MAX_BATCH_ANSWER_BYTES,
  )
  if (posted.kind === 'failed') {
    const wholeBatchFails = posted.status === null || posted.status >= 500 || posted.status === 200
    return wholeBatchFails ? posted : { kind: 'single', status: posted.status }
  }
  const results = (posted.json as Partial<BatchAnswer>).results
  if (posted.status !== 200 || !Array.isArray(results) || results.length !== events.length) {
    return posted.status >= 500 || posted.status === 408 || posted.status === 429
      ? { kind: 'failed', status: posted.status, reason: 'status' }
      : { kind: 'single', status: posted.status }
  }
  return {
    kind: 'answered',
    results: results.map((item) =>
      item && typeof item === 'object' && typeof item.status === 'number'
        ? sortAnswer(item.status, item as unknown as Record<string, unknown>)
        : { kind: 'failed', status: null, reason: 'status' },
    ),
  }
}

/** An answer that is the origin's own (or a status that settles nothing), or why there is none. */
export type Posted =
  | { kind: 'answered'; status: number; json: Record<string, unknown> }
  | Extract<ForwardResult, { kind: 'failed' }>

/**
 * POSTs a body to one of the origin's routes, signed now, within `timeoutMs`, never following a
 * redirect, and reads at most `maxAnswerBytes` of the answer. A 2xx or a 400 / 413 / 422 counts
 * only when the origin signed it.
 */
export async function postSigned(
  origin: OriginConfig,
  body: string,
  timeoutMs: number,
  path: OriginPath,
  via: 'live' | 'queue' = 'live',
  maxAnswerBytes = MAX_ANSWER_BYTES,
): Promise<Posted> {
  const secret = origin.secrets[0] as string
  const route: ForwardRoute = { method: 'POST', path }
  const signed = await signForward(secret, body, undefined, route)
  let response: Response
  try {
    response = await fetch(`${origin.url}${path}`, {
      method: route.method,
      headers: {
        'content-type': 'application/json',
        ...(via === 'queue' ? { [VIA_HEADER]: via } : {}),
        ...signed,
      },
      body,
      signal: AbortSignal.timeout(timeoutMs),
      ...NO_REDIRECT,
    })
  } catch (err) {
    const timedOut =
      err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')
    return { kind: 'failed', status: null, reason: timedOut ? 'timeout' : 'network' }
  }
  if (isRedirect(response.status)) {
    await response.body?.cancel().catch(() => {})
    return { kind: 'failed', status: response.status, reason: 'redirect' }
  }
  const answer = await readAnswer(response, maxAnswerBytes)
  if (answer === null) return { kind: 'failed', status: response.status, reason: 'network' }
  // Signed by the origin for this request, status and body: nothing else is its answer.
  const own = await verifyAnswer(
    origin.secrets,
    signed[SIGNATURE_HEADER] as string,
    response.status,
    answer.text,
    response.headers.get(ANSWER_SIGNATURE_HEADER),
  )
  if (!own && (response.ok || PERMANENT_STATUSES.has(response.status))) {
    // Only the origin's own answer may settle an event, for good or for bad.
    return { kind: 'failed', status: response.status, reason: 'unsigned_answer' }
  }
  return { kind: 'answered', status: response.status, json: answer.json }
}

interface Answer {
  text: string
  json: Record<string, unknown>
}

/** The answer's bytes (bounded) and its JSON object, `{}` when it is none; null if unreadable. */
async function readAnswer(response: Response, maxBytes: number): Promise<Answer | null> {
  let text: string
  try {
    text = (await readBoundedBody(response, maxBytes)).text
  } catch {
    return null
  }
  try {
    const parsed: unknown = JSON.parse(text)
    const json =
      parsed && typeof parsed === 'object' && !Array.isArray(parsed)
        ? (parsed as Record<string, unknown>)
        : {}
    return { text, json }
  } catch {
    return { text, json: {} }
  }
}

function sortAnswer(status: number, answer: Record<string, unknown>): ForwardResult {
  const ok = status >= 200 && status < 300
  if (ok) {
    return {
      kind: 'accepted',
      status,
      outcome: typeof answer.outcome === 'string' ? (answer.outcome as IngestOutcome) : null,
      duplicate: answer.duplicate === true,
      payloadMismatch: answer.payloadMismatch === true,
      ...storedAnswer(answer.answer),
    }
  }
  if (PERMANENT_STATUSES.has(status)) {
    const error = answer.error as { code?: unknown } | undefined
    return {
      kind: 'permanent',
      status,
      code: typeof error?.code === 'string' ? error.code : null,
    }
  }
  return { kind: 'failed', status, reason: 'status' }
}

function storedAnswer(value: unknown): { answer?: StoredAnswer } {
  const parsed = v.safeParse(StoredAnswerSchema, value)
  return parsed.success ? { answer: parsed.output } : {}
}

/**
 * How a forward that was not accepted reads in a log line or a dead letter: `503`, `timeout`,
 * `400 invalid_event`, `302 redirect`, `200 unsigned_answer`.
 */
export function describeForward(result: Exclude<ForwardResult, { kind: 'accepted' }>): string {
  if (result.kind === 'permanent') return `${result.status} ${result.code ?? ''}`.trim()
  if (result.status === null) return result.reason
  return result.reason === 'status' ? String(result.status) : `${result.status} ${result.reason}`
}
