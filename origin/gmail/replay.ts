/**
 * The replay of a Gmail inbound failure (`npm run failures -- replay <id>`): the message is
 * fetched again by its Gmail id (`source_ref`) and taken through the poller's own path
 * ({@link ingestGmailMessage}: fetch, parse, claim, ingest), so a replay, a second replay, or a
 * replay of a message that landed meanwhile is one row. The row is resolved once the message is
 * stored; a message that is still bad is recorded again (the same row stays dead, with the new
 * error); Gmail or OAuth being unavailable throws and leaves the row as it was.
 *
 * No mailbox lease is taken: every step is idempotent, so the poller may run at the same time.
 * @module
 */
import { readClaimSettings } from '../../claims'
import type { IngestOutcome } from '../../contract/event'
import type { OriginEnv } from '../config'
import type { Database } from '../db'
import { type DeadInboundFailure, resolveInboundFailure } from '../failures/inbound'
import { type Logger, silentLogger } from '../log'
import { gmailClient } from './api'
import type { GmailConfig } from './config'
import { DEFAULT_RETRY } from './http'
import { gmailClaims } from './index'
import { gmailDeliveryKey, ingestGmailMessage } from './ingest-message'
import { gmailMailbox } from './mailbox-connection'
import { createGmailMetrics, type FailureReason } from './metrics'
import { DEFAULT_LIMITS } from './poller'

export interface GmailReplayDeps {
  db: Database
  /** The mailbox's GMAIL_* settings, as the poller has them. */
  config: GmailConfig
  /** For the Redis claims the worker shares (UPSTASH_REDIS_REST_*, REDIS_KEY_PREFIX); optional. */
  env: OriginEnv
  logger?: Logger
}

export type GmailReplayOutcome =
  /** Stored now (created, or a duplicate of what landed meanwhile); the row is resolved. */
  | { outcome: 'resolved'; gmailId: string; ingested: IngestOutcome; messageId: string | null }
  /** Stored, but another replay resolved the row first. */
  | { outcome: 'claim_lost'; gmailId: string; ingested: IngestOutcome; messageId: string | null }
  /** Still bad: recorded again with this error; the row stays dead. */
  | { outcome: 'failed'; gmailId: string; reason: FailureReason; error: string }
  /** Labelled SENT/DRAFT/SPAM/TRASH now: not a customer message; the row stays dead. */
  | { outcome: 'skipped'; gmailId: string }
  /** Not a row of this mailbox (another GMAIL_MAILBOX), or without a Gmail id. */
  | { outcome: 'not_replayable'; reason: string }

/** @throws when Gmail, OAuth or the database is unavailable (the row is left as it was). */
export async function replayGmailFailure(
  deps: GmailReplayDeps,
  failure: DeadInboundFailure,
): Promise<GmailReplayOutcome> {
  const gmailId = failure.sourceRef
  if (!gmailId) return { outcome: 'not_replayable', reason: 'no Gmail message id was kept' }
  if (failure.deliveryKey !== gmailDeliveryKey(deps.config.mailbox, gmailId)) {
    return {
      outcome: 'not_replayable',
      reason: `it is not a message of GMAIL_MAILBOX ${deps.config.mailbox}`,
    }
  }
  // Its warnings were logged when the poller started.
  const redis = readClaimSettings(deps.env, [])
  const http = { timeoutMs: DEFAULT_LIMITS.httpTimeoutMs, retry: DEFAULT_RETRY }
  const { api } = gmailClient(deps.config, http, DEFAULT_LIMITS.maxMessageBytes)
  // Keyed as the poller keys now; a disabled mailbox is not polled, nor replayed.
  const keyed = await gmailMailbox(deps.db, deps.config.mailbox, deps.config.aliases)
  if (keyed.kind === 'disabled') {
    return { outcome: 'not_replayable', reason: 'its mailbox connection is disabled' }
  }
  const taken = await ingestGmailMessage(
    {
      api,
      db: deps.db,
      mailbox: deps.config.mailbox,
      aliases: keyed.aliases,
      claims: gmailClaims(redis),
      metrics: createGmailMetrics(),
      logger: deps.logger ?? silentLogger,
    },
    gmailId,
  )
  switch (taken.status) {
    case 'failed':
      return { outcome: 'failed', gmailId, reason: taken.reason, error: taken.error }
    case 'skipped':
      return { outcome: 'skipped', gmailId }
    case 'ingested': {
      const stored = { gmailId, ingested: taken.outcome, messageId: taken.messageId }
      return (await resolveInboundFailure(deps.db, failure.id, taken.messageId))
        ? { outcome: 'resolved', ...stored }
        : { outcome: 'claim_lost', ...stored }
    }
  }
}
