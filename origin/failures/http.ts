/**
 * `POST /v1/failures/inbound/{id}/replay`: the operator's replay of one dead inbound event, over
 * HTTP (what `npm run failures -- replay <id>` does for queue rows), behind OPERATOR_TOKEN (its
 * refusals limited per client address with every other operator credential) and an
 * Idempotency-Key (idempotency-http/middleware.ts, the API's middleware): a retried click or a
 * script run twice gets the first answer again, replayed, instead of "no longer dead". Its
 * answers are stored in the same `idempotency_keys` rows (origin/idempotency.ts), scoped to
 * tenant `operator`.
 * The replay is the service's (replay-inbound.ts), for queue rows alone; each one it runs is
 * audited in `console_audit` in the console's words (a stored answer replayed runs nothing and is
 * not).
 * @module
 */
import { type Context, Hono } from 'hono'
import type { ClaimStore } from '../../claims'
import { IDEMPOTENCY_TTL_SECONDS } from '../../claims/settings'
import { problemResponse } from '../../contract/problem'
import { type IdempotencyVariables, idempotency } from '../../idempotency-http/middleware'
import { audit } from '../audit'
import type { Database } from '../db'
import { durableAnswers } from '../idempotency'
import { limitedOperatorAccess, type SignInLimit } from '../sign-in-limit'
import { replayQueued } from './replay-inbound'
import type { FailureReplay } from './replay-outcome'
import { auditResult, describeReplay } from './replay-text'
import type { GatewayReplay } from './unrecognized'

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
      if (!/^\d{1,18}$/.test(id)) return notFound()
      const queued = { db: deps.db, claims: deps.claims ?? null, gateway: deps.gateway ?? null }
      const outcome = await replayQueued(queued, id)
      if (outcome.status === 'not_found') return notFound()
      await audit(deps.db, {
        actor: ACTOR,
        action: 'replay',
        target: `failure ${id}`,
        result: auditResult(outcome),
      })
      return replayAnswer(c, outcome)
    },
  )
  return routes
}

const notFound = () =>
  problemResponse('not_found', 'no dead inbound failure of the queue with this id')

/** The outcome as this route answers it: 200 with what it became, or a problem. */
function replayAnswer(c: Context<ReplayEnv>, outcome: FailureReplay): Response {
  const failureId = outcome.failureId
  switch (outcome.status) {
    case 'replayed': {
      const { replayed } = outcome
      const replay = replayed.byAnother ? 'claim_lost' : 'resolved'
      if (replayed.path === 'gateway') {
        return c.json({ failureId, replay, decisions: replayed.decisions }, 200)
      }
      if (replayed.path === 'downstream') return c.json({ failureId, replay }, 200)
      return c.json(
        { failureId, replay, outcome: replayed.ingested, messageId: replayed.messageId },
        200,
      )
    }
    case 'already_resolved':
      return c.json({ failureId, replay: 'already_resolved' }, 200)
    case 'not_found':
      return notFound()
    case 'refused':
      return outcome.refusal.code === 'not_replayable'
        ? problemResponse('invalid_request', 'its stored event cannot be ingested')
        : problemResponse('invalid_request', describeReplay(outcome))
    case 'failed':
      return outcome.failure.code === 'still_unrecognized'
        ? problemResponse('invalid_request', 'still unrecognized by the gateway')
        : problemResponse('unavailable', 'the gateway did not take it')
  }
}
