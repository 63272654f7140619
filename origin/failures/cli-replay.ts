/**
 * `npm run failures -- replay <id>` and `replay --all-dead`: one dead row, or every one, taken
 * through the path it failed on. A downstream row goes through the relay's statements with the
 * same `Idempotency-Key: outbox-{id}`; an inbound row through the ingest of a live delivery; a
 * Gmail row is fetched again first (origin/gmail/replay.ts); an unrecognized event is classified
 * again by the Worker (unrecognized.ts). None can double anything.
 * @module
 */
import type { ClaimStore } from '../../claims'
import { isUnrecognizedEvent } from '../../contract/unrecognized-event'
import type { OriginEnv } from '../config'
import type { Database } from '../db'
import type { GmailConfig } from '../gmail/config'
import { GmailHttpError } from '../gmail/http'
import { replayGmailFailure } from '../gmail/replay'
import type { DownstreamConfig } from '../outbox/config'
import { type CliIo, describeOutcome, EXIT, ingestedLine } from './cli-output'
import {
  type DeadInboundFailure,
  getDeadInboundFailure,
  INBOUND_STAGE,
  replayInboundEvent,
} from './inbound'
import type { RetryPolicy } from './policy'
import { type ReplayOutcome, replayClaimed } from './replay'
import { claimDeadFailure, deadFailureIds, type Failure, getFailure } from './store'
import { gatewayReplayOf, NO_GATEWAY, replayUnrecognized } from './unrecognized'

/** A replay's claim lasts past the hand-off's bound; should this process die, it runs out. */
const REPLAY_LEASE_MARGIN_MS = 30_000
const ALL_DEAD_MAX = 10_000

export interface ReplayCliDeps {
  db: Database
  /** Null without DOWNSTREAM_URL: inbound rows still replay, downstream rows do not. */
  downstream: DownstreamConfig | null
  retry: RetryPolicy
  /** Null without GMAIL_*: downstream and queue rows still replay, Gmail rows do not. */
  gmail: GmailConfig | null
  env: OriginEnv
  /** The Worker's claims (its UPSTASH_* settings): a replayed event's says `done`. */
  claims?: ClaimStore | null
}

const NO_DOWNSTREAM = 'DOWNSTREAM_URL is not set: a downstream replay hands outbox rows to it'
const NO_GMAIL =
  'GMAIL_CLIENT_ID, GMAIL_CLIENT_SECRET, GMAIL_REFRESH_TOKEN and GMAIL_MAILBOX are not set: a Gmail row is replayed by fetching the message again'

/** Why this process cannot replay `failure` at all (a configuration error), or null. */
function missingSettings(deps: ReplayCliDeps, failure: Failure): string | null {
  if (failure.stage === 'downstream' && !deps.downstream) return NO_DOWNSTREAM
  if (failure.stage === INBOUND_STAGE && failure.source === 'gmail' && !deps.gmail) return NO_GMAIL
  return null
}

export async function replayOne(deps: ReplayCliDeps, id: string, io: CliIo): Promise<number> {
  const failure = await getFailure(deps.db, id)
  if (!failure) {
    io.err(`failure ${id}: no such row`)
    return EXIT.failed
  }
  const missing = missingSettings(deps, failure)
  if (missing) {
    io.err(`configuration: ${missing}`)
    return EXIT.usage
  }
  const refusal = notReplayable(failure, deps.retry)
  if (refusal) {
    const { line, exit } = refusal
    ;(exit === EXIT.ok ? io.out : io.err)(`failure ${id}: ${line}`)
    return exit
  }
  return (await replayDead(deps, failure, io)) ? EXIT.ok : EXIT.failed
}

export async function replayAllDead(deps: ReplayCliDeps, io: CliIo): Promise<number> {
  const ids = await deadFailureIds(deps.db, ALL_DEAD_MAX)
  if (ids.length === 0) {
    io.out('no dead failures')
    return EXIT.ok
  }
  let resolved = 0
  for (const id of ids) {
    const failure = await getFailure(deps.db, id)
    const missing = failure && missingSettings(deps, failure)
    if (missing) {
      io.err(`failure ${id}: skipped; ${missing}`)
      continue
    }
    if (failure && (await replayDead(deps, failure, io))) resolved++
  }
  const failed = ids.length - resolved
  io.out(`replayed ${ids.length} dead failures: ${resolved} resolved, ${failed} still failing`)
  return failed === 0 ? EXIT.ok : EXIT.failed
}

function notReplayable(
  failure: Failure,
  retry: RetryPolicy,
): { line: string; exit: number } | null {
  if (failure.status === 'resolved')
    return { line: 'already resolved; nothing to replay', exit: EXIT.ok }
  if (failure.status === 'pending') {
    return {
      line:
        `pending: the relay retries it at ${failure.nextAttemptAt} (attempt ${failure.attempts + 1}` +
        ` of ${retry.maxAttempts}); only dead rows are replayed by hand`,
      exit: EXIT.failed,
    }
  }
  if (failure.stage === INBOUND_STAGE) return null
  if (failure.stage !== 'downstream' || failure.outboxId === null) {
    return { line: `stage ${failure.stage} is not replayed by this tool`, exit: EXIT.failed }
  }
  return null
}

/** Replays one dead row and prints one line. True when it is now stored / handed off. */
async function replayDead(deps: ReplayCliDeps, failure: Failure, io: CliIo): Promise<boolean> {
  if (failure.stage === INBOUND_STAGE) return replayInbound(deps, failure.id, io)
  const downstream = deps.downstream as DownstreamConfig
  const leaseMs = downstream.timeoutMs + REPLAY_LEASE_MARGIN_MS
  const claimed = await claimDeadFailure(deps.db, failure.id, leaseMs)
  if (!claimed) {
    io.err(`failure ${failure.id}: no longer dead (replayed or resolved meanwhile)`)
    return false
  }
  const outcome = await replayClaimed({ ...deps, downstream }, claimed)
  const line = describeOutcome(outcome, claimed.row.id)
  ;(isSuccess(outcome) ? io.out : io.err)(`failure ${failure.id}: ${line}`)
  return isSuccess(outcome)
}

/** An inbound event through the ingest path: one line naming the message it is now. */
async function replayInbound(deps: ReplayCliDeps, id: string, io: CliIo): Promise<boolean> {
  const failure = await getDeadInboundFailure(deps.db, id)
  if (!failure) {
    io.err(`failure ${id}: no longer dead (replayed or resolved meanwhile)`)
    return false
  }
  if (failure.source === 'gmail') return replayGmail(deps, failure, io)
  if (isUnrecognizedEvent(failure.event)) return replayKept(deps, failure, io)
  const replay = await replayInboundEvent(deps.db, failure, deps.claims ?? null)
  if (replay.outcome === 'not_replayable') {
    io.err(`failure ${id}: not replayable: ${replay.reason}`)
    return false
  }
  const { outcome, messageId } = replay.result
  const lost = replay.outcome === 'claim_lost'
  io.out(`failure ${id}: ${ingestedLine(failure.deliveryKey, outcome, messageId, lost)}`)
  return true
}

/** An unrecognized event: classified again by the Worker's code (unrecognized.ts). */
async function replayKept(
  deps: ReplayCliDeps,
  failure: DeadInboundFailure,
  io: CliIo,
): Promise<boolean> {
  const line = (text: string) => `failure ${failure.id}: ${text}`
  const gateway = gatewayReplayOf(deps.env)
  if (!gateway) {
    io.err(line(`configuration: ${NO_GATEWAY}`))
    return false
  }
  const replay = await replayUnrecognized(deps.db, gateway, failure)
  switch (replay.outcome) {
    case 'resolved':
    case 'claim_lost': {
      const lost = replay.outcome === 'claim_lost' ? ' (resolved by another replay)' : ''
      const decisions = replay.decisions.join(', ')
      io.out(line(`${failure.deliveryKey} classified again: ${decisions}; resolved${lost}`))
      return true
    }
    case 'still_unrecognized':
      io.err(line(`still unrecognized (${replay.reason}); the row stays dead`))
      return false
    case 'failed':
      io.err(line(`not replayed now: ${replay.error}; the row stays dead`))
      return false
  }
}

/** A Gmail row: the message fetched again and taken through the poller's path. */
async function replayGmail(
  deps: ReplayCliDeps,
  failure: DeadInboundFailure,
  io: CliIo,
): Promise<boolean> {
  const config = { db: deps.db, config: deps.gmail as GmailConfig, env: deps.env }
  const line = (text: string) => `failure ${failure.id}: ${text}`
  let replay: Awaited<ReturnType<typeof replayGmailFailure>>
  try {
    replay = await replayGmailFailure(config, failure)
  } catch (err) {
    // Gmail or OAuth unavailable: nothing was tried, nothing written; the row is as it was.
    if (!(err instanceof GmailHttpError)) throw err
    io.err(line(`Gmail unavailable (${err.message}); the row stays dead, try again later`))
    return false
  }
  switch (replay.outcome) {
    case 'not_replayable':
      io.err(line(`not replayable: ${replay.reason}`))
      return false
    case 'failed':
      io.err(line(`still failing: ${replay.error}; the row stays dead`))
      return false
    case 'skipped':
      io.err(
        line(
          `gmail message ${replay.gmailId} is labelled SENT, DRAFT, SPAM or TRASH now: not a customer message; the row stays dead`,
        ),
      )
      return false
    case 'resolved':
    case 'claim_lost': {
      const what = `gmail message ${replay.gmailId}`
      const lost = replay.outcome === 'claim_lost'
      io.out(line(ingestedLine(what, replay.ingested, replay.messageId, lost)))
      return true
    }
  }
}

function isSuccess(outcome: ReplayOutcome): boolean {
  return (
    outcome.outcome === 'resolved' ||
    outcome.outcome === 'already_processed' ||
    (outcome.outcome === 'claim_lost' && outcome.handedOff)
  )
}
