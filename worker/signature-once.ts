/**
 * A signature good for one body only ({@link OnceBinding}: WeChat's plain mode signs no body).
 * The first request binds the signature's key to its body's hash; the same body again (a
 * redelivery) passes, and its message key then answers it as a duplicate; any other body is 401.
 *
 * The binding is kept in two places at once: Redis (the fast path) and the origin's
 * `signature_bindings` table (Postgres, `POST /v1/signature-bindings`), asked side by side. Either
 * one saying "another body" refuses; either one binding it (first use or the same body) passes.
 * When neither answers, the binding is `pending`: a push then travels with it (the event's
 * `signatureBinding`, spooled like any event while the origin is down) and the origin binds it
 * before it stores the event, refusing another body then (422 `signature_reused`); a console GET
 * check has nothing to carry it and gets the retry answer. So no store down loses a plain-mode
 * message, and Redis forgetting a key (a flush, a failover) forgets no binding. The limit: a reuse
 * passes only while the one store that saw the first use is down and the other never saw it
 * (docs/guarantees.md).
 * @module
 */
import { type ClaimOutcome, type ClaimStore, formatDeliveryKey, sameHash } from '../claims'
import { type BindAnswer, bindAnswer, type SignatureBinding } from '../contract/signature-binding'
import { describeError } from '../shared/describe-error'
import type { OnceBinding } from './channels/types'
import type { Settings } from './config'
import { RetryLaterError, UnauthorizedError } from './errors'
import { postSigned } from './forward'

/** Tries of the Redis half before it counts as unanswered: it is idempotent (one key, one hash). */
const REDIS_TRIES = 3
/** The origin's half is one small statement; it must leave the forward most of the deadline. */
const ORIGIN_BIND_TIMEOUT_MS = 1_500

/** What one store said: bound (first use or this body again), another body, or no answer. */
type StoreVerdict = { kind: BindAnswer } | { kind: 'unanswered'; why: string }

/** The signature bound (first use or this body again), or no store could tell: `pending`. */
export type OnceOutcome = { kind: 'bound' } | { kind: 'pending'; binding: SignatureBinding }

export async function claimSignatureOnce(
  settings: Settings,
  claims: ClaimStore | null,
  channel: string,
  once: OnceBinding,
): Promise<OnceOutcome> {
  const key = formatDeliveryKey(once.key)
  const verdicts = await Promise.all([inRedis(claims, key, once), atOrigin(settings, key, once)])
  if (verdicts.some((v) => v.kind === 'other')) {
    throw new UnauthorizedError(`${channel}: signature_reused (another body)`)
  }
  if (verdicts.some((v) => v.kind === 'bound')) return { kind: 'bound' }
  return { kind: 'pending', binding: { key, hash: once.hash, ttlSeconds: once.ttlSeconds } }
}

/** A pending binding nothing can carry (a GET check): the retry answer, the vendor asks again. */
export function refusePending(channel: string): never {
  throw new RetryLaterError(
    `${channel}: neither Redis nor the origin could bind a one-time signature`,
  )
}

async function inRedis(
  claims: ClaimStore | null,
  key: string,
  once: OnceBinding,
): Promise<StoreVerdict> {
  if (!claims) return { kind: 'unanswered', why: 'Redis not configured' }
  let outcome: ClaimOutcome = await claims.record(key, once.hash, once.ttlSeconds)
  for (let tries = 1; outcome.status === 'unavailable' && tries < REDIS_TRIES; tries++) {
    outcome = await claims.record(key, once.hash, once.ttlSeconds)
  }
  if (outcome.status === 'claimed') return { kind: 'bound' }
  if (outcome.status === 'unavailable') {
    const { name, message } = describeError(outcome.error)
    return { kind: 'unanswered', why: `Redis: ${name}: ${message}` }
  }
  const stored = outcome.hash
  return { kind: stored !== null && sameHash(stored, once.hash) ? 'bound' : 'other' }
}

async function atOrigin(settings: Settings, key: string, once: OnceBinding): Promise<StoreVerdict> {
  if (!settings.origin) return { kind: 'unanswered', why: 'origin not configured' }
  const body = JSON.stringify({ key, hash: once.hash, ttlSeconds: once.ttlSeconds })
  const timeoutMs = Math.min(settings.originTimeoutMs, ORIGIN_BIND_TIMEOUT_MS)
  const posted = await postSigned(settings.origin, body, timeoutMs, '/v1/signature-bindings')
  if (posted.kind === 'failed') {
    return { kind: 'unanswered', why: `origin: ${posted.status ?? ''} ${posted.reason}`.trim() }
  }
  const answer = posted.status === 200 ? bindAnswer(posted.json) : null
  return answer ? { kind: answer } : { kind: 'unanswered', why: `origin: ${posted.status}` }
}
