/**
 * One Gmail message through the same dedup as a Cloudflare delivery of the same email: fetched
 * raw, filtered by label, parsed by contract/email.ts (so: the same message key and payload
 * hash), claimed in Redis under the worker's own key (`dedup:email:{mailbox}:{sender}:{id}`, same
 * ClaimStore protocol), ingested in process through origin/ingest.ts, and the claim completed.
 *
 * Redis only saves work here: a claim the worker already completed ("done") skips the ingest; a
 * claim the worker holds right now (in flight) or a Redis that does not answer sends the message
 * straight to Postgres, whose unique index decides. A failed ingest releases our claim and throws,
 * so the poll fails, stores no historyId, and the message is tried again next poll.
 * @module
 */
import { EmailParseError, parseEmail } from '../../contract/email'
import { finalizeEvent, type InboundEvent, type IngestResult } from '../../contract/event'
import { formatDeliveryKey } from '../../worker/channels/types'
import { type ClaimStore, newClaimToken } from '../../worker/dedup/claims'
import type { Database } from '../db'
import { describeError, InvalidEventError } from '../errors'
import { ingestEvent } from '../ingest'
import type { Logger } from '../log'
import type { GmailApi } from './api'
import type { GmailMetrics } from './metrics'

/** Gmail labels of mail that is not an inbound customer message. */
export const SKIPPED_LABELS = ['SENT', 'DRAFT', 'SPAM', 'TRASH'] as const

export interface MessageDeps {
  api: GmailApi
  db: Database
  mailbox: string
  /** Null: no Redis configured; Postgres decides everything. */
  claims: ClaimStore | null
  redisKeyPrefix: string
  metrics: GmailMetrics
  logger: Logger
}

export type MessageOutcome =
  | { status: 'skipped'; reason: 'label' | 'unparseable' | 'gone' | 'rejected' }
  | {
      status: 'ingested'
      outcome: IngestResult['outcome']
      decidedBy: 'redis' | 'postgres'
      messageKey: string
    }

export function hasSkippedLabel(labelIds: readonly string[] | null): boolean {
  return labelIds?.some((label) => (SKIPPED_LABELS as readonly string[]).includes(label)) ?? false
}

export async function ingestGmailMessage(deps: MessageDeps, id: string): Promise<MessageOutcome> {
  const message = await deps.api.rawMessage(id)
  if (!message) return skip(deps, id, 'gone')
  deps.metrics.fetched.inc()
  if (hasSkippedLabel(message.labelIds)) return skip(deps, id, 'label')

  let parsed: Awaited<ReturnType<typeof parseEmail>>
  try {
    parsed = await parseEmail(message.raw, { mailbox: deps.mailbox })
  } catch (err) {
    if (!(err instanceof EmailParseError)) throw err
    deps.logger.warn('gmail message unparseable', {
      gmailId: id,
      code: err.code,
      detail: err.detail,
    })
    return skip(deps, id, 'unparseable')
  }
  // The row remembers which path created it: `gmail:{mailbox}:{id}` (the payload hash does not
  // cover the delivery key, so both paths still agree on the message).
  const event = await finalizeEvent({ ...parsed.draft, deliveryKey: `gmail:${deps.mailbox}:${id}` })
  const redisKey = `${deps.redisKeyPrefix}${formatDeliveryKey(parsed.key)}`
  let decided: Decided
  try {
    decided = await claimAndIngest(deps, event, redisKey)
  } catch (err) {
    // A message the database refuses for its content fails the same way on every poll: skip it
    // (logged and counted) rather than stop the mailbox's history at it forever.
    if (!(err instanceof InvalidEventError)) throw err
    deps.logger.error('gmail message rejected', { gmailId: id, messageKey: event.messageKey })
    return skip(deps, id, 'rejected')
  }
  deps.metrics.ingested.labels(decided.outcome, decided.decidedBy).inc()
  deps.logger.info('gmail message', {
    gmailId: id,
    messageKey: event.messageKey,
    fallbackKey: parsed.key.fallback,
    outcome: decided.outcome,
    decidedBy: decided.decidedBy,
    redis: decided.redis,
    ...(decided.payloadMismatch ? { payloadMismatch: true } : {}),
  })
  return {
    status: 'ingested',
    outcome: decided.outcome,
    decidedBy: decided.decidedBy,
    messageKey: event.messageKey,
  }
}

interface Decided {
  outcome: IngestResult['outcome']
  decidedBy: 'redis' | 'postgres'
  redis: 'ok' | 'unavailable' | 'not_configured' | 'inflight'
  payloadMismatch: boolean
}

async function claimAndIngest(
  deps: MessageDeps,
  event: InboundEvent,
  redisKey: string,
): Promise<Decided> {
  const { claims } = deps
  if (!claims) return viaPostgres(deps, event, 'not_configured')
  const token = newClaimToken()
  const claim = await claims.claim(redisKey, token, event.payloadHash)
  switch (claim.status) {
    case 'settled':
      return {
        outcome: 'duplicate',
        decidedBy: 'redis',
        redis: 'ok',
        payloadMismatch: claim.hash !== null && claim.hash !== event.payloadHash,
      }
    case 'inflight':
      // The worker is forwarding this very email now: Postgres decides between us.
      return viaPostgres(deps, event, 'inflight')
    case 'unavailable': {
      deps.logger.warn('gmail redis unavailable', { error: describeError(claim.error).message })
      // Our SET may still have landed: settle it with our token, best effort.
      const decided = await viaPostgres(deps, event, 'unavailable')
      await claims.complete(redisKey, token, event.payloadHash).catch(() => false)
      return decided
    }
    case 'claimed':
      break
  }
  let result: IngestResult
  try {
    result = await ingestEvent(deps.db, event)
  } catch (err) {
    await claims.release(redisKey, token, event.payloadHash).catch(() => false)
    throw err
  }
  await claims.complete(redisKey, token, event.payloadHash).catch(() => false)
  return {
    outcome: result.outcome,
    decidedBy: 'postgres',
    redis: 'ok',
    payloadMismatch: result.payloadMismatch === true,
  }
}

async function viaPostgres(
  deps: MessageDeps,
  event: InboundEvent,
  redis: Decided['redis'],
): Promise<Decided> {
  const result = await ingestEvent(deps.db, event)
  return {
    outcome: result.outcome,
    decidedBy: 'postgres',
    redis,
    payloadMismatch: result.payloadMismatch === true,
  }
}

function skip(
  deps: MessageDeps,
  id: string,
  reason: 'label' | 'unparseable' | 'gone' | 'rejected',
): MessageOutcome {
  deps.metrics.skipped.labels(reason).inc()
  deps.logger.debug('gmail message skipped', { gmailId: id, reason })
  return { status: 'skipped', reason }
}
