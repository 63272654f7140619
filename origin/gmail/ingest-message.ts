/**
 * One Gmail message through the same dedup as a Cloudflare delivery of the same email: fetched
 * raw, filtered by label, parsed by email/parse.ts (so: the same message key and payload
 * hash), claimed in Redis under the worker's own key (`dedup:email:{mailbox}:{sender}:{id}`, same
 * ClaimStore protocol), ingested in process through origin/ingest.ts, and the claim completed.
 *
 * Redis only saves work here: a claim the worker already completed ("done") skips the ingest; a
 * claim the worker holds right now (in flight) or a Redis that does not answer sends the message
 * straight to Postgres, whose unique index decides.
 *
 * Two kinds of failure, kept apart (the line is drawn in api.ts):
 * - This message is bad ({@link BadMessageError}: Gmail will not serve it, it does not parse, or
 *   the database refuses its content): it is recorded in channel_failures (stage inbound, source
 *   gmail, delivery key `gmail:{mailbox}:{gmail id}`), counted and logged, and the outcome is
 *   'failed': the poll moves on and may store a historyId past it. The same function replays it
 *   (`replayGmailFailure`).
 * - Anything else (Gmail, OAuth, Postgres unavailable) throws: the poll fails, stores nothing,
 *   and the message is tried again next poll. A failed ingest releases our claim first.
 * @module
 */

import { type ClaimStore, formatDeliveryKey, runClaimed } from '../../claims'
import { DECISION_MSG, type DecisionLog, decisionLevel } from '../../contract/decision-log'
import { finalizeEvent, type InboundEvent, type IngestResult } from '../../contract/event'
import type { MailboxAliases } from '../../email/mailbox'
import { EmailParseError, parseEmail } from '../../email/parse'
import type { Database } from '../db'
import { describeError, InvalidEventError } from '../errors'
import { recordInboundFailure } from '../failures/inbound'
import { ingestEvent } from '../ingest'
import type { Logger } from '../log'
import { BadMessageError, type GmailApi } from './api'
import type { FailureReason, GmailMetrics, SkipReason } from './metrics'

/** Gmail labels of mail that is not an inbound customer message. */
export const SKIPPED_LABELS = ['SENT', 'DRAFT', 'SPAM', 'TRASH'] as const

export interface MessageDeps {
  api: GmailApi
  db: Database
  mailbox: string
  /**
   * The mailbox connection's aliases, else EMAIL_MAILBOX_ALIASES (mailbox-connection.ts: the
   * parser scopes keys by the canonical mailbox).
   */
  aliases: MailboxAliases
  /** Null: no Redis configured; Postgres decides everything. */
  claims: ClaimStore | null
  metrics: GmailMetrics
  logger: Logger
}

export type MessageOutcome =
  | { status: 'skipped'; reason: SkipReason }
  /** Recorded in channel_failures (row `failureId`) and passed over. */
  | { status: 'failed'; reason: FailureReason; error: string; failureId: string }
  | {
      status: 'ingested'
      outcome: IngestResult['outcome']
      decidedBy: 'redis' | 'postgres'
      messageKey: string
      /** Null when Redis decided (the claim was "done"). */
      messageId: string | null
    }

export function hasSkippedLabel(labelIds: readonly string[] | null): boolean {
  return labelIds?.some((label) => (SKIPPED_LABELS as readonly string[]).includes(label)) ?? false
}

/**
 * The delivery key of Gmail message `id`: its event's (so the row remembers which path created
 * it) and, when it cannot be fetched or parsed, its failure row's. Before the message is parsed
 * its Message-ID is unknown; the Gmail id is the one stable name there is, and it is per mailbox.
 */
export function gmailDeliveryKey(mailbox: string, id: string): string {
  return `gmail:${mailbox}:${id}`
}

/**
 * Takes message `id`: ingested, skipped by label, or recorded as a failure.
 * @throws when Gmail, OAuth or the database is unavailable (nothing is recorded then).
 */
export async function ingestGmailMessage(deps: MessageDeps, id: string): Promise<MessageOutcome> {
  try {
    return await takeMessage(deps, id)
  } catch (err) {
    if (!(err instanceof BadMessageError)) throw err
    return recordBadMessage(deps, id, err)
  }
}

async function takeMessage(deps: MessageDeps, id: string): Promise<MessageOutcome> {
  const message = await deps.api.rawMessage(id)
  deps.metrics.fetched.inc()
  if (hasSkippedLabel(message.labelIds)) return skip(deps, id, 'label')
  const parsed = await parse(message.raw, deps)
  // The payload hash does not cover the delivery key, so both paths still agree on the message.
  const event = await finalizeEvent({
    ...parsed.draft,
    deliveryKey: gmailDeliveryKey(deps.mailbox, id),
  })
  let decided: Decided
  try {
    decided = await claimAndIngest(deps, event, formatDeliveryKey(parsed.key))
  } catch (err) {
    // A message the database refuses for its content fails the same way on every poll.
    if (err instanceof InvalidEventError) throw new BadMessageError('rejected', err.message, event)
    throw err
  }
  deps.metrics.ingested.labels(decided.outcome, decided.decidedBy).inc()
  const line: DecisionLog = {
    component: 'gmail',
    channel: 'email',
    gmailId: id,
    deliveryKey: event.deliveryKey,
    messageKey: event.messageKey,
    fallbackKey: parsed.key.fallback,
    decision: decided.outcome,
    decidedBy: decided.decidedBy,
    redis: decided.redis,
    messageId: decided.messageId,
    ...(decided.payloadMismatch ? { payloadMismatch: true } : {}),
  }
  deps.logger[decisionLevel(line)](DECISION_MSG, { ...line })
  return {
    status: 'ingested',
    outcome: decided.outcome,
    decidedBy: decided.decidedBy,
    messageKey: event.messageKey,
    messageId: decided.messageId,
  }
}

async function parse(raw: Buffer, deps: MessageDeps): ReturnType<typeof parseEmail> {
  try {
    return await parseEmail(raw, { mailbox: deps.mailbox, aliases: deps.aliases })
  } catch (err) {
    if (!(err instanceof EmailParseError)) throw err
    const reason = err.code === 'too_large' || err.code === 'no_sender' ? err.code : 'unparseable'
    // The parser's detail names the rule, never the content.
    throw new BadMessageError(reason, `${err.code}: ${err.detail}`)
  }
}

/**
 * One row per delivery key: recording the same message again (a poll that failed after
 * recording it, a replay that failed again) updates that row, so recording before the historyId
 * is stored can never add a second one, and a crash in between loses nothing.
 */
async function recordBadMessage(
  deps: MessageDeps,
  id: string,
  bad: BadMessageError,
): Promise<MessageOutcome> {
  const failureId = await recordInboundFailure(deps.db, {
    channel: 'email',
    deliveryKey: gmailDeliveryKey(deps.mailbox, id),
    source: 'gmail',
    sourceRef: id,
    event: bad.event,
    error: bad.message,
    attempts: 1,
  })
  deps.metrics.failed.labels(bad.reason).inc()
  deps.logger.error('gmail message failed', {
    gmailId: id,
    reason: bad.reason,
    detail: bad.detail,
    failureId,
  })
  return { status: 'failed', reason: bad.reason, error: bad.message, failureId }
}

interface Decided {
  outcome: IngestResult['outcome']
  messageId: string | null
  decidedBy: 'redis' | 'postgres'
  redis: 'ok' | 'unavailable' | 'not_configured' | 'inflight'
  payloadMismatch: boolean
}

/**
 * The Worker's claim protocol around the ingest (claims/run-claimed.ts): a claim the Worker already
 * settled skips the ingest; one it holds right now, or a Redis that does not answer, leaves the
 * decision to Postgres; a failed ingest releases our claim.
 */
function claimAndIngest(deps: MessageDeps, event: InboundEvent, key: string): Promise<Decided> {
  return runClaimed<Decided>(
    deps.claims,
    { key, hash: event.payloadHash },
    {
      settled: ({ payloadMismatch }) => ({
        outcome: 'duplicate',
        messageId: null,
        decidedBy: 'redis',
        redis: 'ok',
        payloadMismatch,
      }),
      async run(hold) {
        if (hold.redis === 'unavailable') {
          deps.logger.warn('gmail redis unavailable', { error: describeError(hold.error).message })
        }
        const result = await ingestEvent(deps.db, event)
        const decided: Decided = {
          outcome: result.outcome,
          messageId: result.messageId,
          decidedBy: 'postgres',
          redis: hold.redis,
          payloadMismatch: result.payloadMismatch === true,
        }
        return { result: decided, end: 'done' }
      },
    },
  )
}

function skip(deps: MessageDeps, id: string, reason: SkipReason): MessageOutcome {
  deps.metrics.skipped.labels(reason).inc()
  deps.logger.debug('gmail message skipped', { gmailId: id, reason })
  return { status: 'skipped', reason }
}
