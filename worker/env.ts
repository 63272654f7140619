/**
 * The Worker's bindings. What wrangler.toml declares ([vars] and the queue producers) is generated
 * from it by `npm run types` into worker/worker-configuration.d.ts (`Cloudflare.Env`; `npm test`
 * fails when that file is stale); what wrangler cannot know, the secrets (`wrangler secret put`,
 * locally `.dev.vars`), is listed here. Every setting is optional: a deployment may leave any
 * unset, and worker/config.ts turns the strings into typed settings with defaults.
 * @module
 */
import type { DeadMessage, SpoolMessage } from './spool/message'

/** Comma-separated lists where rotation applies; per tenant `TENANT=secret1|secret2,OTHER=...`. */
export interface Secrets {
  SLACK_SIGNING_SECRET?: string
  TWILIO_AUTH_TOKEN?: string
  TELEGRAM_SECRET_TOKEN?: string
  // Per tenant (worker/tenants.ts); each replaces (Slack, Twilio) or extends (Telegram) its
  // single-tenant variable above.
  SLACK_SIGNING_SECRETS_BY_APP?: string
  TWILIO_AUTH_TOKENS_BY_ACCOUNT?: string
  TELEGRAM_SECRET_TOKENS_BY_BOT?: string
  ORIGIN_SHARED_SECRET?: string
  UPSTASH_REDIS_REST_URL?: string
  UPSTASH_REDIS_REST_TOKEN?: string
  /** Bearer token for the operator's `GET /healthz/deep`; unset = that route answers 404. */
  OPERATOR_TOKEN?: string
  /** Event channels queued when the origin fails (worker/spool/config.ts); default all. */
  SPOOL_CHANNELS?: string
}

type Generated = Omit<Cloudflare.Env, 'SPOOL' | 'SPOOL_DEAD'>

export interface Env extends Partial<Generated>, Secrets {
  /** Events the origin could not take when they arrived (the spool queue). */
  SPOOL?: Queue<SpoolMessage>
  /** Events given up on, for the dead-letter consumer to record. */
  SPOOL_DEAD?: Queue<DeadMessage>
}
