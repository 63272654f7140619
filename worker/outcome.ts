/**
 * What the delivery core (deliver.ts) makes of one delivery, for every front door to answer from.
 * A leaf: the replies (channels/replies.ts) read it without standing on the core.
 * @module
 */
import type { StoredAnswer } from '../contract/idempotency'
import type { Decision, WorkerDecisionLog } from './log'

/**
 * What became of a delivery: the log's decision and fields, less what the front door adds (its
 * reply's status, the time taken). A front door needs only `decision` to answer: `retry` asks the
 * sender to send again, `rejected` is refused for good, `challenge` is a handshake to answer with
 * `challenge`; every other decision (forwarded, duplicate, recorded, ignored, spooled) is taken.
 */
export type Outcome = OutcomeFields &
  ({ decision: Exclude<Decision, 'challenge'> } | { decision: 'challenge'; challenge: string })

/**
 * A decision's fields; `channel` defaults to the front door's (an event names sms / whatsapp).
 * `answer`: an `api` event's answer as the origin stored it, for the API's reply (never logged).
 */
type OutcomeFields = Omit<WorkerDecisionLog, 'channel' | 'decision' | 'status' | 'ms'> & {
  channel?: string
  answer?: StoredAnswer
}
