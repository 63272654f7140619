/**
 * The API's front door to the delivery core (deliver.ts): what it answers for an Outcome (the
 * stored answer, 202 queued, or a problem), and the Outcome of each answer the Idempotency-Key
 * middleware gives itself (a replay, 422, 409: claims/idempotency.ts's OwnAnswer), so every answer is logged and counted as a
 * decision of channel `api`, like every channel's (logOutcome).
 * @module
 */
import type { OwnAnswer } from '../../claims/idempotency'
import { DECISION_HEADER } from '../../contract/decision-log'
import { problemResponse } from '../../contract/problem'
import { answerResponse } from '../../idempotency-http/answers'
import { NOT_RECORDED } from '../deliver-spool'
import { logProblem } from '../log'
import type { Outcome } from '../outcome'

/** What a client is told to wait before retrying when the gateway cannot take its message now. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = '5'

const refused = () => problemResponse('invalid_request', 'the message was refused')

export const unavailable = () =>
  problemResponse('unavailable', undefined, { 'retry-after': UNAVAILABLE_RETRY_AFTER_SECONDS })

/**
 * The reply to the core's Outcome, and the Outcome as logged (a forward without a stored answer
 * is answered 503: the log says `retry`, as the client is told).
 */
export function apiReply(outcome: Outcome): { response: Response; outcome: Outcome } {
  const answered = (response: Response, logged: Outcome = outcome) => {
    response.headers.set(DECISION_HEADER, logged.decision)
    return { response, outcome: logged }
  }
  switch (outcome.decision) {
    case 'forwarded':
    case 'duplicate': {
      // The origin's answer, stored with the message: the client's, now and on every retry.
      if (outcome.answer) return answered(answerResponse(outcome.answer))
      // Taken, but without a stored answer the Worker can read (the origin stores one with every
      // API message): nothing to give the client now; its retry replays the stored answer.
      logProblem('error', 'origin_stored_no_answer', { deliveryKey: outcome.deliveryKey })
      const retry: Outcome = {
        ...outcome,
        decision: 'retry',
        decidedBy: 'gateway',
        reason: 'origin_stored_no_answer',
      }
      return answered(unavailable(), retry)
    }
    case 'spooled':
      // Queued (the origin down, or shed): not the answer, only its promise (docs/api.md).
      return answered(Response.json({ status: 'queued' }, { status: 202 }))
    case 'rejected':
      return answered(refused())
    case 'retry':
      // Refused by the origin, its dead letter not sent: a webhook's vendor is asked to send it
      // again (it would never be kept otherwise); the API's client is told to fix it, as ever.
      return answered(outcome.reason === NOT_RECORDED ? refused() : unavailable())
    default:
      // An API event is never a challenge, ignored or recorded.
      return answered(unavailable())
  }
}

/** The Outcome of an answer the Idempotency-Key middleware gave without running the route. */
export function ownAnswerOutcome(own: OwnAnswer, deliveryKey: string): Outcome {
  const base = { channel: 'api', deliveryKey, decidedBy: own.from } as const
  const redis = own.from === 'postgres' ? {} : ({ redis: 'ok' } as const)
  switch (own.kind) {
    case 'replayed':
      return { ...base, ...redis, decision: 'duplicate' }
    case 'reused':
      // The key with another request: the first one's message is kept, this one refused (422).
      return { ...base, ...redis, decision: 'duplicate', payloadMismatch: true }
    case 'in_use':
      return { ...base, ...redis, decision: 'retry', reason: 'inflight' }
  }
}
