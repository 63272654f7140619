/**
 * Forwards one normalized event to the origin (`POST {ORIGIN_URL}/v1/events`), signed with the
 * first `ORIGIN_SHARED_SECRET`, within a timeout, and sorts the answer into three outcomes:
 * - accepted: any 2xx. The origin took responsibility (new row, duplicate, edit applied).
 * - permanent: 400 / 413 / 422. The event itself is bad and will never be accepted; retrying it
 *   forever helps no one.
 * - failed: everything else: 5xx, timeout, network, 408 / 429, and the other 4xx (401, 403, 404,
 *   ...). Those say our configuration is wrong (secret, URL), not the event: once fixed, a retry
 *   succeeds, so they must not drop the message.
 * @module
 */

import { readBoundedBody } from '../contract/body'
import type { InboundEvent, IngestOutcome } from '../contract/event'
import { signForward } from '../contract/forward-signature'
import type { OriginConfig } from './config'

export type ForwardResult =
  | {
      kind: 'accepted'
      status: number
      outcome: IngestOutcome | null
      duplicate: boolean
      payloadMismatch: boolean
    }
  | { kind: 'permanent'; status: number; code: string | null }
  | { kind: 'failed'; status: number | null; reason: 'timeout' | 'network' | 'status' }

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
export type OriginPath = '/v1/events' | '/v1/failures/inbound' | '/v1/decisions'

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
  const secret = origin.secrets[0] as string
  let response: Response
  try {
    response = await fetch(`${origin.url}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(via === 'queue' ? { [VIA_HEADER]: via } : {}),
        ...(await signForward(secret, body)),
      },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    })
  } catch (err) {
    const timedOut =
      err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')
    return { kind: 'failed', status: null, reason: timedOut ? 'timeout' : 'network' }
  }
  let answer: Record<string, unknown> = {}
  try {
    const { text } = await readBoundedBody(response, MAX_ANSWER_BYTES)
    answer = (JSON.parse(text) as Record<string, unknown>) ?? {}
  } catch {
    // A body that is not JSON (or a timeout while reading it) changes nothing below: the status
    // decides. Only 2xx bodies carry details we log.
  }
  if (response.ok) {
    return {
      kind: 'accepted',
      status: response.status,
      outcome: typeof answer.outcome === 'string' ? (answer.outcome as IngestOutcome) : null,
      duplicate: answer.duplicate === true,
      payloadMismatch: answer.payloadMismatch === true,
    }
  }
  if (PERMANENT_STATUSES.has(response.status)) {
    const error = answer.error as { code?: unknown } | undefined
    return {
      kind: 'permanent',
      status: response.status,
      code: typeof error?.code === 'string' ? error.code : null,
    }
  }
  return { kind: 'failed', status: response.status, reason: 'status' }
}

/** How a forward that was not accepted reads in a log line or a dead letter: `503`, `timeout`, `400 invalid_event`. */
export function describeForward(result: Exclude<ForwardResult, { kind: 'accepted' }>): string {
  if (result.kind === 'permanent') return `${result.status} ${result.code ?? ''}`.trim()
  return result.status === null ? result.reason : String(result.status)
}
