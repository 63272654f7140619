/**
 * The replay of dead failure rows, one or every one, for `npm run failures -- replay` and the
 * console alike: each row taken through the path it failed on, answered as a
 * {@link FailureReplay} (no lines, no exit codes; the callers say it their way). A downstream row
 * goes through the relay's statements with the same `Idempotency-Key: outbox-{id}` (replay.ts); an
 * inbound row through the ingest of a live delivery, the Worker's code or a Gmail fetch
 * (replay-inbound.ts). None can double anything. Database errors propagate.
 * @module
 */
import type { DownstreamConfig } from '../outbox/config'
import { INBOUND_STAGE } from './inbound'
import type { RetryPolicy } from './policy'
import { replayClaimed } from './replay'
import { type InboundReplayDeps, NO_GMAIL, replayInbound } from './replay-inbound'
import { type FailureReplay, failed, type ReplayRefusal, refused } from './replay-outcome'
import {
  claimDeadFailure,
  DOWNSTREAM_STAGE,
  deadFailureIds,
  type Failure,
  getFailure,
} from './store'

/** A replay's claim lasts past the hand-off's bound; should this process die, it runs out. */
const REPLAY_LEASE_MARGIN_MS = 30_000
/** Rows one {@link replayAllDead} takes at most. */
export const ALL_DEAD_MAX = 10_000

export interface ReplayServiceDeps extends InboundReplayDeps {
  /** Null without DOWNSTREAM_URL: inbound rows still replay, downstream rows are refused. */
  downstream: DownstreamConfig | null
  retry: RetryPolicy
}

export const NO_DOWNSTREAM =
  'DOWNSTREAM_URL is not set: a downstream replay hands outbox rows to it'

/** One row by id: replayed if it is dead and this process has what its path needs. */
export async function replayFailure(deps: ReplayServiceDeps, id: string): Promise<FailureReplay> {
  const failure = await getFailure(deps.db, id)
  if (!failure) return { status: 'not_found', failureId: id }
  if (failure.status === 'resolved') return { status: 'already_resolved', failureId: id }
  const refusal = refusalOf(deps, failure)
  if (refusal) return refused(id, refusal)
  if (failure.stage === INBOUND_STAGE) return replayInbound(deps, id)
  return replayDownstream(deps, deps.downstream as DownstreamConfig, id)
}

/** Every dead replayable row, oldest first, one after another: each outcome as it comes. */
export async function* replayAllDead(deps: ReplayServiceDeps): AsyncGenerator<FailureReplay> {
  for (const id of await deadFailureIds(deps.db, ALL_DEAD_MAX)) yield replayFailure(deps, id)
}

/** Why this process does not try `failure` (its settings, its status, its stage), or null. */
function refusalOf(deps: ReplayServiceDeps, failure: Failure): ReplayRefusal | null {
  if (failure.stage === DOWNSTREAM_STAGE && !deps.downstream) {
    return { code: 'not_configured', missing: NO_DOWNSTREAM }
  }
  if (failure.stage === INBOUND_STAGE && failure.source === 'gmail' && !deps.gmail) {
    return { code: 'not_configured', missing: NO_GMAIL }
  }
  if (failure.status === 'pending') {
    const { nextAttemptAt, attempts } = failure
    return {
      code: 'pending',
      nextAttemptAt,
      attempt: attempts + 1,
      maxAttempts: deps.retry.maxAttempts,
    }
  }
  if (failure.stage === INBOUND_STAGE) return null
  if (failure.stage !== DOWNSTREAM_STAGE || failure.outboxId === null) {
    return { code: 'stage_not_replayed', stage: failure.stage }
  }
  return null
}

/** A dead downstream row: claimed back, then handed off as the relay's retry would. */
async function replayDownstream(
  deps: ReplayServiceDeps,
  downstream: DownstreamConfig,
  id: string,
): Promise<FailureReplay> {
  const claimed = await claimDeadFailure(deps.db, id, downstream.timeoutMs + REPLAY_LEASE_MARGIN_MS)
  if (!claimed) return refused(id, { code: 'not_dead' })
  const outboxId = claimed.row.id
  const outcome = await replayClaimed({ ...deps, downstream }, claimed)
  const replayed = (handedOff: boolean, byAnother: boolean): FailureReplay => ({
    status: 'replayed',
    failureId: id,
    replayed: { path: 'downstream', outboxId, handedOff, byAnother },
  })
  switch (outcome.outcome) {
    case 'resolved':
      return replayed(true, false)
    case 'already_processed':
      return replayed(false, false)
    case 'claim_lost':
      return outcome.handedOff ? replayed(true, true) : failed(id, { code: 'claim_lost' })
    case 'retry_scheduled':
    case 'dead': {
      const { error, attempts } = outcome
      const retryInMs = outcome.outcome === 'dead' ? null : outcome.retryInMs
      return failed(id, { code: 'handoff_failed', error, attempts, retryInMs })
    }
  }
}
