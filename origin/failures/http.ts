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
import { type Context, Hono } from 'hono'
import { type ClaimStore, type IdempotencyVariables, idempotency } from '../../claims'
import { IDEMPOTENCY_TTL_SECONDS } from '../../claims/settings'
import { problemResponse } from '../../contract/problem'
import { isUnrecognizedEvent } from '../../contract/unrecognized-event'
import { audit } from '../audit'
import type { Database } from '../db'
import { durableAnswers } from '../idempotency'
import { limitedOperatorAccess, type SignInLimit } from '../sign-in-limit'
import { type DeadInboundFailure, getDeadInboundFailure, replayInboundEvent } from './inbound'
import { type GatewayReplay, NO_GATEWAY, replayUnrecognized } from './unrecognized'

export interface FailureReplayDeps {
  db: Database
  operatorToken: string | undefined
  /** Refused operator tokens per client address, shared with the origin's other credential checks. */
  signInLimit: SignInLimit
  /** The Redis claim in front; null: the Postgres rows decide alone. */
  claims?: ClaimStore | null
  /** @default IDEMPOTENCY_TTL_SECONDS's default (24 h) */
  idempotencyTtlSeconds?: number
  /** The Worker's replay route, for unrecognized events (GATEWAY_URL); null: they are refused. */
  gateway?: GatewayReplay | null
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
      const target = `failure ${id}`
      if (isUnrecognizedEvent(failure.event)) return replayKept(c, deps, failure, target)
      const replay = await replayInboundEvent(deps.db, failure, deps.claims ?? null)
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

/** An unrecognized event, classified again by the Worker: as the CLI does, audited the same. */
async function replayKept(
  c: Context<ReplayEnv>,
  deps: FailureReplayDeps,
  failure: DeadInboundFailure,
  target: string,
): Promise<Response> {
  if (!deps.gateway) return problemResponse('invalid_request', NO_GATEWAY)
  const replay = await replayUnrecognized(deps.db, deps.gateway, failure)
  const result =
    replay.outcome === 'resolved' || replay.outcome === 'claim_lost'
      ? `ok: ${replay.outcome}, ${replay.decisions.join(', ')}`
      : `failed: ${replay.outcome === 'failed' ? replay.error : `still unrecognized (${replay.reason})`}`
  await audit(deps.db, { actor: ACTOR, action: 'replay', target, result })
  if (replay.outcome === 'still_unrecognized') {
    return problemResponse('invalid_request', 'still unrecognized by the gateway')
  }
  if (replay.outcome === 'failed')
    return problemResponse('unavailable', 'the gateway did not take it')
  const { decisions } = replay
  return c.json({ failureId: failure.id, replay: replay.outcome, decisions }, 200)
}
