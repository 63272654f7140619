/**
 * Idempotency-Key for our own POST routes as one Hono middleware any route of either wing can
 * take (the Worker's `POST /v1/messages`, the origin's replay route): it reads the header and the
 * bounded body, runs the route through the claim protocol (claims/idempotency.ts: 422 for another
 * request under the key, 409 with Retry-After while the first runs, the stored answer with
 * `Idempotent-Replayed: true` after it) and words each answer the protocol gives itself.
 * @module
 */
import type { Context, Env, MiddlewareHandler } from 'hono'
import {
  type DurableAnswers,
  type IdempotentCall,
  type OwnAnswer,
  runIdempotent,
} from '../claims/idempotency'
import { parseIdempotencyKey, requestFingerprint } from '../claims/idempotency-key'
import type { ClaimHold } from '../claims/run-claimed'
import type { ClaimStore } from '../claims/store'
import { problemResponse } from '../contract/problem'
import { BodyOverLimitError, readBoundedBody } from '../shared/body'
import { sha256Hex } from '../shared/crypto'
import { IDEMPOTENCY_KEY_HEADER, isReplayed, ownResponse } from './answers'

/**
 * `idempotencyHold`: how this request stands with its claim while the route runs (the claim is
 * the middleware's: a route that claims in Redis itself must not claim the same request again).
 */
export type IdempotencyVariables = { idempotency: IdempotentCall; idempotencyHold: ClaimHold }

export interface IdempotencyOptions<E extends Env> {
  /** Method and path of the scope: `POST /v1/messages`. */
  route: string
  /** The caller's tenant, as the route's authentication (run before this) found it. */
  tenant(c: Context<E>): string
  claims(c: Context<E>): ClaimStore | null
  ttlSeconds(c: Context<E>): number
  maxBodyBytes(c: Context<E>): number
  /** Absent: the route's own work stores and finds answers (the Worker's, through the origin). */
  durable?(c: Context<E>): DurableAnswers
  /** Told of each answer the middleware gives itself (for the route's log and counts). */
  answered?(c: Context<E>, own: OwnAnswer, response: Response): void
}

/** The middleware; the route finds its call under `c.get('idempotency')`. */
export function idempotency<E extends Env & { Variables: IdempotencyVariables }>(
  options: IdempotencyOptions<E>,
): MiddlewareHandler<E> {
  return async (c, next) => {
    const verdict = parseIdempotencyKey(c.req.header(IDEMPOTENCY_KEY_HEADER))
    if (!verdict.ok) return problemResponse(verdict.code)
    const body = await boundedBody(c.req.raw, options.maxBodyBytes(c))
    if (body === null) return problemResponse('body_too_large')
    const call = await idempotentCall(c, options, verdict.key, body)
    c.set('idempotency', call)
    const outcome = await runIdempotent(call, options.claims(c), options.durable?.(c) ?? null, {
      async run(hold) {
        c.set('idempotencyHold', hold)
        await next()
        return c.res
      },
      status: (response) => response.status,
      replayed: isReplayed,
      body: (response) => response.clone().json(),
    })
    // The route ran: its answer is `c.res` already.
    if (outcome.kind === 'ran') return
    const response = ownResponse(outcome)
    options.answered?.(c, outcome, response)
    c.res = response
  }
}

async function idempotentCall<E extends Env>(
  c: Context<E>,
  options: IdempotencyOptions<E>,
  key: string,
  body: string,
): Promise<IdempotentCall> {
  const path = new URL(c.req.url).pathname
  return {
    tenant: options.tenant(c),
    route: options.route,
    key,
    keyHash: await sha256Hex(key),
    fingerprint: await requestFingerprint(c.req.method, path, body),
    ttlSeconds: options.ttlSeconds(c),
    body,
  }
}

async function boundedBody(request: Request, maxBytes: number): Promise<string | null> {
  try {
    return (await readBoundedBody(request, maxBytes)).text
  } catch (err) {
    if (err instanceof BodyOverLimitError) return null
    throw err
  }
}
