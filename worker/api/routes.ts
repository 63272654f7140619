/**
 * The public API, `/v1`: POST /v1/messages (an API key's tenant posts a customer's message; it
 * becomes a row through the same ingest path as every channel, channel `api`, queued like any
 * event when the origin is down) behind Idempotency-Key (claims/idempotency.ts), and
 * GET /v1/openapi.json, the document that describes it. Errors are RFC 9457 problems.
 * @module
 */
import { Hono } from 'hono'
import { answerResponse, type IdempotencyVariables, idempotency } from '../../claims/idempotency'
import { finalizeEvent, type InboundEvent, parseInboundEvent } from '../../contract/event'
import { problemResponse } from '../../contract/problem'
import { admission } from '../admission'
import { type Settings, settingsFor } from '../config'
import type { Env } from '../env'
import { forwardEvent } from '../forward'
import { claimStoreFor } from '../gateway'
import { describeError, logDecision, logProblem } from '../log'
import { enqueueEvent } from '../spool/producer'
import { apiTenant } from './auth'
import { apiCors, originAllowedFor } from './cors'
import { messageDraft, parseMessageRequest } from './message'
import { OPENAPI_DOCUMENT } from './openapi'
import { apiSettingsFor } from './settings'

type ApiEnv = { Bindings: Env; Variables: IdempotencyVariables & { tenant: string } }

/** What a client is told to wait before retrying when the gateway cannot take its message now. */
const UNAVAILABLE_RETRY_AFTER_SECONDS = '5'

export const api = new Hono<ApiEnv>()

api.use('*', apiCors())

api.get('/openapi.json', (c) => c.json(OPENAPI_DOCUMENT))

api.post(
  '/messages',
  // Before the key is checked or the body parsed: over the isolate's bound, the API's 503.
  admission<ApiEnv>('api', () => unavailable()),
  async (c, next) => {
    const settings = apiSettingsFor(c.env)
    const tenant = await apiTenant(settings, c.req.header('authorization'))
    if (tenant === null) {
      return problemResponse('unauthorized', undefined, { 'www-authenticate': 'Bearer' })
    }
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
  }),
  async (c) => {
    const startedAt = Date.now()
    const call = c.get('idempotency')
    const parsed = parseMessageRequest(call.body)
    if (!parsed.ok) return problemResponse('invalid_request', parsed.detail)
    const settings = settingsFor(c.env)
    const valid = parseInboundEvent(
      await finalizeEvent(messageDraft(call, parsed.request, new Date())),
    )
    if (!valid.ok) return problemResponse('invalid_request', valid.message)
    const { response, decision } = await landOrQueue(c.env, settings, valid.event)
    // Counted like every front door's queued event: the spool's backlog is queued minus landed.
    const claims = decision === 'spooled' ? claimStoreFor(settings) : null
    if (claims) c.executionCtx.waitUntil(claims.count('spool_queued:api').catch(() => {}))
    logDecision({
      channel: 'api',
      deliveryKey: valid.event.deliveryKey,
      decision,
      decidedBy: decision === 'spooled' || decision === 'retry' ? 'gateway' : 'postgres',
      status: response.status,
      ms: Date.now() - startedAt,
    })
    return response
  },
)

api.onError((err, c) => {
  logProblem('error', 'internal_error', { path: c.req.path, detail: describeError(err) })
  return problemResponse('internal_error')
})

/**
 * The event to the origin, whose answer (stored with the message) is the client's; when the
 * origin cannot take it now, onto the spool queue: 202, and the stored answer on a later retry.
 */
async function landOrQueue(
  env: Env,
  settings: Settings,
  event: InboundEvent,
): Promise<{
  response: Response
  decision: 'forwarded' | 'duplicate' | 'spooled' | 'retry' | 'rejected'
}> {
  if (!settings.origin) return { response: unavailable(), decision: 'retry' }
  const result = await forwardEvent(settings.origin, event, settings.originTimeoutMs)
  if (result.kind === 'accepted') {
    if (result.answer) {
      const decision = result.answer.replayed || result.duplicate ? 'duplicate' : 'forwarded'
      return { response: answerResponse(result.answer), decision }
    }
    // Taken, but without a stored answer the Worker can read (the origin stores one with every
    // API message): nothing to give the client now; its retry replays the stored answer.
    logProblem('error', 'origin_stored_no_answer', { deliveryKey: event.deliveryKey })
    return { response: unavailable(), decision: 'retry' }
  }
  if (result.kind === 'permanent') {
    return {
      response: problemResponse('invalid_request', 'the message was refused'),
      decision: 'rejected',
    }
  }
  // Not taken now: queued when possible.
  const queued = await enqueueEvent(
    {
      queue: env.SPOOL ?? null,
      // An API message is bounded far below a queue message; the bucket is passed all the same.
      bodies: env.SPOOL_BODIES ?? null,
      enabled: settings.spool.channels.has('api'),
      timeoutMs: settings.originTimeoutMs,
      ttlSeconds: event.idempotency?.ttlSeconds,
    },
    `dedup:${event.deliveryKey}`,
    event,
  )
  if (queued.status === 'queued') {
    return { response: Response.json({ status: 'queued' }, { status: 202 }), decision: 'spooled' }
  }
  return { response: unavailable(), decision: 'retry' }
}

const unavailable = () =>
  problemResponse('unavailable', undefined, { 'retry-after': UNAVAILABLE_RETRY_AFTER_SECONDS })
