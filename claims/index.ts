/**
 * The claim protocol both wings use (the Worker's webhooks and email relay, the origin's Gmail
 * poller): states and their encoding, the Lua scripts, the store behind a Redis port, delivery
 * keys, settings, and {@link runClaimed}, which owns a claim's life; Idempotency-Key's protocol
 * (idempotency.ts; its HTTP middleware is idempotency-http/).
 * @module
 */
import { type SettledMemoSettings, settledMemo } from './memo'
import { upstashPort } from './platforms/upstash'
import type { ClaimSettings } from './settings'
import { ClaimStore } from './store'

export { type DeliveryKey, formatDeliveryKey } from '../contract/delivery-key'
export {
  type DurableAnswer,
  type DurableAnswers,
  type IdempotentCall,
  type IdempotentOutcome,
  type IdempotentRoute,
  type OwnAnswer,
  runIdempotent,
} from './idempotency'
export { parseIdempotencyKey, requestFingerprint } from './idempotency-key'
export { SettledMemo, type SettledMemoSettings } from './memo'
export type { RedisPort } from './port'
export {
  type ClaimEnd,
  type ClaimedWork,
  type ClaimHold,
  type Finished,
  runClaimed,
  type Settled,
} from './run-claimed'
export {
  type ChannelTtlSetting,
  CLAIM_DEFAULTS,
  type ClaimSettings,
  channelTtlSetting,
  type RedisConfig,
  readChannelTtl,
  readClaimSettings,
} from './settings'
export {
  type ClaimOutcome,
  ClaimState,
  decodeValue,
  inflightValue,
  newClaimToken,
  sameHash,
  settledValue,
} from './states'
export { ClaimStore } from './store'

/**
 * The store over Upstash for these settings; null without Redis (then Postgres decides). With
 * `memo` (the Worker's SETTLED_MEMO_*), replays this isolate saw settled skip Redis (claims/memo.ts).
 */
export function claimStore(settings: ClaimSettings, memo?: SettledMemoSettings): ClaimStore | null {
  if (!settings.redis) return null
  const port = upstashPort(settings.redis, settings.redisTimeoutMs)
  return new ClaimStore(port, settings, memo ? settledMemo(memo) : null)
}
