/**
 * `POST /v1/failures/inbound/{id}/replay`: the operator's replay of one dead inbound event, over
 * HTTP (what `npm run failures -- replay <id>` does for queue rows), behind OPERATOR_TOKEN (its
 * refusals limited per client address with every other operator credential) and an
 * Idempotency-Key (claims/idempotency.ts, the API's middleware): a retried click or a script run
 * twice gets the first answer again, replayed, instead of "no longer dead". Its answers are
 * stored in the same `idempotency_keys` rows (origin/idempotency.ts), scoped to tenant `operator`.
 * Each replay it runs is audited in `console_audit` like the console's (a stored answer replayed
 * runs nothing and is not).
 * @module
 */
import { Hono } from 'hono'
import { type ClaimStore, type IdempotencyVariables, idempotency } from '../../claims'
import { IDEMPOTENCY_TTL_SECONDS } from '../../claims/settings'
import { problemResponse } from '../../contract/problem'
import { audit } from '../audit'
import type { Database } from '../db'
import { durableAnswers } from '../idempotency'
import { limitedOperatorAccess, type SignInLimit } from '../sign-in-limit'
import { getDeadInboundFailure, replayInboundEvent } from './inbound'

export interface FailureReplayDeps {
  db: Database
  operatorToken: string | undefined
  /** Refused operator tokens per client address, shared with the origin's other credential checks. */
  signInLimit: SignInLimit
  /** The Redis claim in front; null: the Postgres rows decide alone. */
  claims?: ClaimStore | null
  /** @default IDEMPOTENCY_TTL_SECONDS's default (24 h) */
  idempotencyTtlSeconds?: number
}

/** Who a replay over HTTP is, in the audit trail: OPERATOR_TOKEN has no other name. */
const ACTOR = 'operator (HTTP API)'
/** The operator's scope in `idempotency_keys` (the API's tenants are API keys' tenants). */
const OPERATOR_TENANT = 'operator'
/** The body is empty or a small JSON note; nothing larger is read. */
const MAX_BODY_BYTES = 4_096

type ReplayEnv = { Variables: IdempotencyVariables }

export function failureReplayRoutes(deps: FailureReplayDeps): Hono<ReplayEnv> {
  const routes = new Hono<ReplayEnv>()
  routes.post(
    '/inbound/:id/replay',
    async (c, next) => {
      const access = limitedOperatorAccess(c, deps.operatorToken, deps.signInLimit)
      if (!access.ok && access.status === 429) {
        return problemResponse('too_many_requests', undefined, {
          'retry-after': String(access.retryAfter),
        })
      }
      if (!access.ok) return problemResponse(access.status === 404 ? 'not_found' : 'unauthorized')
      await next()
    },
    idempotency<ReplayEnv>({
      route: 'POST /v1/failures/inbound/{id}/replay',
      tenant: () => OPERATOR_TENANT,
      claims: () => deps.claims ?? null,
      ttlSeconds: () => deps.idempotencyTtlSeconds ?? IDEMPOTENCY_TTL_SECONDS.default,
      maxBodyBytes: () => MAX_BODY_BYTES,
      durable: () => durableAnswers(deps.db),
    }),
    async (c) => {
      const id = c.req.param('id')
      const failure = /^\d{1,18}$/.test(id) ? await getDeadInboundFailure(deps.db, id) : null
      if (!failure || failure.source === 'gmail') {
        return problemResponse('not_found', 'no dead inbound failure of the queue with this id')
      }
      const replay = await replayInboundEvent(deps.db, failure, deps.claims ?? null)
      const target = `failure ${id}`
      if (replay.outcome === 'not_replayable') {
        await audit(deps.db, {
          actor: ACTOR,
          action: 'replay',
          target,
          result: 'failed: not replayable',
        })
        return problemResponse('invalid_request', 'its stored event cannot be ingested')
      }
      const { outcome, messageId } = replay.result
      const result = `ok: ${replay.outcome}, ${outcome}${messageId ? `, message ${messageId}` : ''}`
      await audit(deps.db, { actor: ACTOR, action: 'replay', target, result })
      return c.json({ failureId: id, replay: replay.outcome, outcome, messageId }, 200)
    },
  )
  return routes
}
