/**
 * The public API, `/v1`: POST /v1/messages (an API key's tenant posts a customer's message; it
 * becomes a row through the same delivery core as every channel's event, channel `api`: shed,
 * forwarded, queued when the origin cannot take it, counted and logged) behind Idempotency-Key
 * (idempotency-http/middleware.ts over claims/idempotency.ts), and GET /v1/openapi.json, the document that describes it. Errors are
 * RFC 9457 problems.
 *
 * One claim per request, the middleware's. It claims `idem:{hash of tenant, route, key}` with the
 * request's fingerprint (what tells a replay from another request under the key: 422) and keeps
 * the stored answer beside it. The event's delivery key `dedup:api:{tenant}:{key}` is another
 * Redis key, never claimed: the core is handed the middleware's hold (`heldClaim`) instead of
 * claiming it too. A second claim would cost a round trip per request and could only disagree:
 * its hash (the event's, which holds the time received) differs on every retry. The delivery key
 * names the event on the spool queue, which marks it delivered once it lands.
 * @module
 */
import { type Context, Hono } from 'hono'
import type { EventConnection } from '../../contract/connection'
import { DECISION_HEADER } from '../../contract/decision-log'
import { finalizeEvent, parseInboundEvent } from '../../contract/event'
import { problemResponse } from '../../contract/problem'
import { type IdempotencyVariables, idempotency } from '../../idempotency-http/middleware'
import { admission } from '../admission'
import { settingsFor } from '../config'
import { apiKeyOwner } from '../connections/api-keys'
import { deliverEvent, deliveryContext, type LogTarget, logOutcome } from '../deliver'
import type { Env } from '../env'
import { claimStoreFor, waitUntil } from '../gateway'
import { describeError, logProblem } from '../log'
import { apiCors, originAllowedFor } from './cors'
import { apiDeliveryKey, apiEventKey, messageDraft, parseMessageRequest } from './message'
import { OPENAPI_DOCUMENT } from './openapi'
import { apiReply, ownAnswerOutcome, unavailable } from './reply'
import { apiSettingsFor } from './settings'

type ApiEnv = {
  Bindings: Env
  Variables: IdempotencyVariables & {
    tenant: string
    startedAt: number
    /** The registry's connection whose key it is (absent: API_KEYS). */
    connection?: EventConnection
  }
}

/**
 * The client waits for one forward (ORIGIN_TIMEOUT_MS) and, should the origin fail it, one queue
 * send: the core's deadline for an API message.
 */
const budgetMs = (settings: { originTimeoutMs: number; redisTimeoutMs: number }) =>
  2 * settings.originTimeoutMs + settings.redisTimeoutMs

export const api = new Hono<ApiEnv>()

api.use('*', apiCors())

api.get('/openapi.json', (c) => c.json(OPENAPI_DOCUMENT))

api.post(
  '/messages',
  // Before the key is checked or the body parsed: over the isolate's bound, the API's 503.
  admission<ApiEnv>('api', () => unavailable()),
  async (c, next) => {
    c.set('startedAt', Date.now())
    const settings = apiSettingsFor(c.env)
    const owner = await apiKeyOwner(c.env, settings, c.req.header('authorization'))
    if (owner === 'unavailable') return unavailable()
    if (owner === null) {
      return problemResponse('unauthorized', undefined, { 'www-authenticate': 'Bearer' })
    }
    const tenant = owner.tenant
    if (owner.connection) c.set('connection', owner.connection)
    if (!originAllowedFor(settings, tenant, c.req.header('origin'))) {
      return problemResponse('origin_not_allowed')
    }
    c.set('tenant', tenant)
    await next()
  },
  idempotency<ApiEnv>({
    route: 'POST /v1/messages',
    tenant: (c) => c.get('tenant'),
    claims: (c) => claimStoreFor(settingsFor(c.env)),
    ttlSeconds: (c) => apiSettingsFor(c.env).idempotencyTtlSeconds,
    maxBodyBytes: (c) => settingsFor(c.env).maxBodyBytes,
    // A replay from Redis, a 422 or a 409: the route never ran, the decision is logged here.
    answered(c, own, response) {
      const outcome = ownAnswerOutcome(own, apiEventKey(c.get('idempotency')))
      response.headers.set(DECISION_HEADER, outcome.decision)
      logOutcome(logTarget(c), outcome, response.status)
    },
  }),
  async (c) => {
    const call = c.get('idempotency')
    const parsed = parseMessageRequest(call.body)
    if (!parsed.ok) return problemResponse('invalid_request', parsed.detail)
    const settings = settingsFor(c.env)
    const connection = c.get('connection')
    const valid = parseInboundEvent(
      await finalizeEvent({
        ...messageDraft(call, parsed.request, new Date()),
        ...(connection ? { connection } : {}),
      }),
    )
    if (!valid.ok) return problemResponse('invalid_request', valid.message)
    if (!settings.origin) return unavailable()
    const ctx = deliveryContext(c.env, settings, {
      ...logTarget(c),
      budgetMs: budgetMs(settings),
      dedupTtlSeconds: call.ttlSeconds,
      heldClaim: c.get('idempotencyHold'),
    })
    const { response, outcome } = apiReply(
      await deliverEvent(ctx, apiDeliveryKey(call), valid.event),
    )
    logOutcome(ctx, outcome, response.status)
    return response
  },
)

api.onError((err, c) => {
  logProblem('error', 'internal_error', { path: c.req.path, detail: describeError(err) })
  return problemResponse('internal_error')
})

/** The API's side of a decision line: channel `api`, timed from the request's start. */
function logTarget(c: Context<ApiEnv>): LogTarget {
  return {
    channel: 'api',
    settings: settingsFor(c.env),
    startedAt: c.get('startedAt'),
    waitUntil: (promise) => waitUntil(c, promise),
    ...(c.get('connection') ? { connection: c.get('connection') } : {}),
  }
}
