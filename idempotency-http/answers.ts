/**
 * Idempotency-Key's answers in HTTP: the header names, a stored answer as a response (marked
 * `Idempotent-Replayed` when an earlier request ran), and the problems (RFC 9457) for the answers
 * the protocol gives itself (claims/idempotency.ts).
 * @module
 */
import type { OwnAnswer } from '../claims/idempotency'
import type { StoredAnswer } from '../contract/idempotency'
import { PROBLEM_CONTENT_TYPE, problemResponse } from '../contract/problem'

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key'
export const REPLAYED_HEADER = 'Idempotent-Replayed'
/** What a client is told to wait before trying a key that is in flight again. */
export const RETRY_AFTER_SECONDS = 1

/** A stored answer as it was stored; marked `Idempotent-Replayed` when an earlier request ran. */
export function answerResponse(answer: StoredAnswer): Response {
  return new Response(JSON.stringify(answer.body), {
    status: answer.status,
    headers: {
      'content-type': answer.status >= 400 ? PROBLEM_CONTENT_TYPE : 'application/json',
      ...(answer.replayed ? { [REPLAYED_HEADER]: 'true' } : {}),
    },
  })
}

/** The route's answer replays one stored before (the origin's, relayed by the Worker). */
export const isReplayed = (response: Response) => response.headers.get(REPLAYED_HEADER) === 'true'

/** The response for an answer the protocol gave without running the route. */
export function ownResponse(own: OwnAnswer): Response {
  switch (own.kind) {
    case 'replayed':
      // The stored answer again: nothing ran.
      return answerResponse({ status: own.answer.status, body: own.answer.body, replayed: true })
    case 'reused':
      return problemResponse('idempotency_key_reused')
    case 'in_use':
      return problemResponse('idempotency_key_in_use', undefined, {
        'retry-after': String(RETRY_AFTER_SECONDS),
      })
  }
}
