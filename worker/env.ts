/**
 * The Worker's bindings: `[vars]` in wrangler.toml plus secrets (`wrangler secret put`, locally
 * `.dev.vars`). Everything arrives as a string; worker/config.ts turns it into typed settings.
 * @module
 */
import type { DeadMessage, SpoolMessage } from './spool/message'
export interface Env {
  // Secrets (comma-separated lists where rotation applies).
  SLACK_SIGNING_SECRET?: string
  TWILIO_AUTH_TOKEN?: string
  TELEGRAM_SECRET_TOKEN?: string
  // Per tenant (`TENANT=secret1|secret2,OTHER=secret3`, worker/tenants.ts); each replaces (Slack,
  // Twilio) or extends (Telegram) its single-tenant variable above.
  SLACK_SIGNING_SECRETS_BY_APP?: string
  TWILIO_AUTH_TOKENS_BY_ACCOUNT?: string
  TELEGRAM_SECRET_TOKENS_BY_BOT?: string
  ORIGIN_SHARED_SECRET?: string
  UPSTASH_REDIS_REST_URL?: string
  UPSTASH_REDIS_REST_TOKEN?: string
  // Plain settings.
  ORIGIN_URL?: string
  PUBLIC_BASE_URL?: string
  TELEGRAM_BOT_ID?: string
  DEDUP_TTL_SECONDS?: string
  CLAIM_LEASE_MS?: string
  ORIGIN_TIMEOUT_MS?: string
  REDIS_TIMEOUT_MS?: string
  INFLIGHT_WAIT_MS?: string
  MAX_BODY_BYTES?: string
  REDIS_KEY_PREFIX?: string
  /** Bearer token for the operator's `GET /healthz/deep`; unset = that route answers 404. */
  OPERATOR_TOKEN?: string
  // The spool (worker/spool/config.ts).
  SPOOL_CHANNELS?: string
  SPOOL_MAX_ATTEMPTS?: string
  SPOOL_RETRY_BASE_SECONDS?: string
  SPOOL_RETRY_MAX_SECONDS?: string
  // Queue producer bindings (wrangler.toml [[queues.producers]]); the consumers are `queue()`.
  /** Events the origin could not take when they arrived. */
  SPOOL?: Queue<SpoolMessage>
  /** Events the spool consumer gave up on, for the dead-letter consumer to record. */
  SPOOL_DEAD?: Queue<DeadMessage>
}
