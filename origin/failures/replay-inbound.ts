/**
 * The replay of a dead inbound row, as a {@link FailureReplay}: a queue row's event through the
 * ingest of a live delivery (inbound.ts), an unrecognized event through the Worker's code
 * (unrecognized.ts), a Gmail row fetched again (origin/gmail/replay.ts). Used by the replay
 * service (replay-service.ts) and, for queue rows alone, by the HTTP route (http.ts).
 * @module
 */
import type { ClaimStore } from '../../claims'
import { isUnrecognizedEvent } from '../../contract/unrecognized-event'
import type { OriginEnv } from '../config'
import type { Database } from '../db'
import type { GmailConfig } from '../gmail/config'
import { GmailHttpError } from '../gmail/http'
import { replayGmailFailure } from '../gmail/replay'
import { type DeadInboundFailure, getDeadInboundFailure, replayInboundEvent } from './inbound'
import { type FailureReplay, failed, refused } from './replay-outcome'
import { type GatewayReplay, NO_GATEWAY, replayUnrecognized } from './unrecognized'

/** What replaying a queue row needs. */
export interface QueuedReplayDeps {
  db: Database
  /** The Worker's claims (its UPSTASH_* settings): a replayed event's says `done`; null: none. */
  claims: ClaimStore | null
  /** The Worker's replay route (GATEWAY_URL), for unrecognized events; null: they are refused. */
  gateway: GatewayReplay | null
}

/** What replaying any inbound row needs: a Gmail row also the mailbox's settings. */
export interface InboundReplayDeps extends QueuedReplayDeps {
  /** Null without GMAIL_*: Gmail rows are refused. */
  gmail: GmailConfig | null
  /** For the Redis claims the Gmail poller shares (UPSTASH_REDIS_REST_*, REDIS_KEY_PREFIX). */
  env: OriginEnv
}

export const NO_GMAIL =
  'GMAIL_CLIENT_ID, GMAIL_CLIENT_SECRET, GMAIL_REFRESH_TOKEN and GMAIL_MAILBOX are not set: a Gmail row is replayed by fetching the message again'

/** A dead inbound row by id; `not_dead` when it is not dead (any more). */
export async function replayInbound(deps: InboundReplayDeps, id: string): Promise<FailureReplay> {
  const failure = await getDeadInboundFailure(deps.db, id)
  if (!failure) return refused(id, { code: 'not_dead' })
  if (failure.source === 'gmail') return replayGmail(deps, failure)
  return replayQueuedRow(deps, failure)
}

/** The HTTP route's replay: a dead queue row by id; any other row is `not_found`. */
export async function replayQueued(deps: QueuedReplayDeps, id: string): Promise<FailureReplay> {
  const failure = await getDeadInboundFailure(deps.db, id)
  if (!failure || failure.source === 'gmail') return { status: 'not_found', failureId: id }
  return replayQueuedRow(deps, failure)
}

async function replayQueuedRow(
  deps: QueuedReplayDeps,
  failure: DeadInboundFailure,
): Promise<FailureReplay> {
  if (isUnrecognizedEvent(failure.event)) return replayKept(deps, failure)
  const failureId = failure.id
  const replay = await replayInboundEvent(deps.db, failure, deps.claims)
  if (replay.outcome === 'not_replayable') {
    return refused(failureId, { code: 'not_replayable', reason: replay.reason })
  }
  const { outcome, messageId } = replay.result
  return {
    status: 'replayed',
    failureId,
    replayed: {
      path: 'ingest',
      deliveryKey: failure.deliveryKey,
      ingested: outcome,
      messageId: messageId ?? null,
      byAnother: replay.outcome === 'claim_lost',
    },
  }
}

/** An unrecognized event: classified again by the Worker's code (unrecognized.ts). */
async function replayKept(
  deps: QueuedReplayDeps,
  failure: DeadInboundFailure,
): Promise<FailureReplay> {
  const failureId = failure.id
  if (!deps.gateway) {
    return refused(failureId, { code: 'not_configured', missing: NO_GATEWAY })
  }
  const replay = await replayUnrecognized(deps.db, deps.gateway, failure)
  switch (replay.outcome) {
    case 'resolved':
    case 'claim_lost': {
      const { decisions } = replay
      const byAnother = replay.outcome === 'claim_lost'
      return {
        status: 'replayed',
        failureId,
        replayed: { path: 'gateway', deliveryKey: failure.deliveryKey, decisions, byAnother },
      }
    }
    case 'still_unrecognized':
      return failed(failureId, { code: 'still_unrecognized', reason: replay.reason })
    case 'failed':
      return failed(failureId, { code: 'gateway_failed', error: replay.error })
  }
}

/** A Gmail row: the message fetched again and taken through the poller's path. */
async function replayGmail(
  deps: InboundReplayDeps,
  failure: DeadInboundFailure,
): Promise<FailureReplay> {
  const failureId = failure.id
  if (!deps.gmail) {
    return refused(failureId, { code: 'not_configured', missing: NO_GMAIL })
  }
  let replay: Awaited<ReturnType<typeof replayGmailFailure>>
  try {
    replay = await replayGmailFailure({ db: deps.db, config: deps.gmail, env: deps.env }, failure)
  } catch (err) {
    // Gmail or OAuth unavailable: nothing was tried, nothing written; the row is as it was.
    if (!(err instanceof GmailHttpError)) throw err
    return failed(failureId, { code: 'gmail_unavailable', error: err.message })
  }
  switch (replay.outcome) {
    case 'not_replayable':
      return refused(failureId, { code: 'not_replayable', reason: replay.reason })
    case 'failed': {
      const { gmailId, error } = replay
      return failed(failureId, { code: 'still_failing', gmailId, error })
    }
    case 'skipped':
      return failed(failureId, { code: 'not_a_customer_message', gmailId: replay.gmailId })
    case 'resolved':
    case 'claim_lost': {
      const { gmailId, ingested, messageId } = replay
      const byAnother = replay.outcome === 'claim_lost'
      return {
        status: 'replayed',
        failureId,
        replayed: { path: 'gmail', gmailId, ingested, messageId, byAnother },
      }
    }
  }
}
