/**
 * The edge gateway Worker: vendor webhooks in (verified, keyed, claimed), one normalized event per
 * logical message out to the origin. Routes: POST /webhooks/{channel} for every channel of
 * worker/channels/index.ts (and GET for those with a handshake), GET /healthz,
 * GET /healthz/deep (operator token); the public API under /v1 (worker/api/routes.ts); the
 * origin's signed replay of kept unrecognized events (worker/unrecognized-replay.ts). `queue()` consumes the spool queue and its dead letters;
 * `email()` is the Email Routing relay. Errors become responses in one place, `app.onError`.
 * @module
 */
import { type Context, Hono } from 'hono'
import { UNRECOGNIZED_REPLAY_ROUTE } from '../contract/unrecognized-event'
import { limitedOperatorAccess, signInLimit } from '../shared/guess-limit'
import { api } from './api/routes'
import { settingsFor } from './config'
import { channelOfPath, countDecision, flushTargetOf, refusalReason } from './decision-counters'
import { handleEmail } from './email'
import type { Env } from './env'
import { GatewayError } from './errors'
import { waitUntil } from './gateway'
import { deepHealth, health, type SpoolBindings } from './health'
import { describeError, logProblem } from './log'
import { webhooks } from './routes'
import { consumeQueue } from './spool/consumer'
import { unrecognizedReplay } from './unrecognized-replay'

const app = new Hono<{ Bindings: Env }>()

app.route('/webhooks', webhooks)
app.route('/v1', api)
app.route(UNRECOGNIZED_REPLAY_ROUTE.path, unrecognizedReplay)

app.get('/healthz', async (c) => c.json(await health(settingsFor(c.env), spoolBindings(c.env))))

/**
 * Refused operator tokens per client address (shared/guess-limit.ts), per isolate: Cloudflare
 * sets `CF-Connecting-IP` itself (a client's own is replaced), so it is the client's address.
 */
const operatorGuesses = signInLimit()

app.get('/healthz/deep', async (c) => {
  const address = c.req.header('cf-connecting-ip') ?? 'unknown'
  const authorization = c.req.header('authorization')
  const access = limitedOperatorAccess(
    address,
    c.env.OPERATOR_TOKEN,
    authorization,
    operatorGuesses,
  )
  if (!access.ok) {
    if (access.status === 429) c.header('retry-after', String(access.retryAfter))
    return c.json({ error: { code: access.code, message: access.message } }, access.status)
  }
  return c.json(await deepHealth(settingsFor(c.env), spoolBindings(c.env)))
})

function spoolBindings(env: Env): SpoolBindings {
  return { spool: Boolean(env.SPOOL), spoolBodies: Boolean(env.SPOOL_BODIES) }
}

app.notFound((c) => c.json({ error: { code: 'not_found', message: 'not found' } }, 404))

app.onError((err, c) => {
  if (err instanceof GatewayError) {
    // The caller gets the code and a fixed message; why (which rule, which variable) is logged.
    logProblem(err.status >= 500 ? 'error' : 'warn', err.code, {
      path: c.req.path,
      detail: err.detail,
    })
    countRefusal(c, err)
    if (err.retryAfterSeconds !== undefined) c.header('retry-after', String(err.retryAfterSeconds))
    return c.json({ error: { code: err.code, message: err.publicMessage } }, err.status)
  }
  logProblem('error', 'internal_error', { path: c.req.path, detail: describeError(err) })
  return c.json({ error: { code: 'internal_error', message: 'internal error' } }, 500)
})

/** A webhook the gateway refused (bad signature, foreign tenant, bad body), for the console. */
function countRefusal(c: Context<{ Bindings: Env }>, err: GatewayError): void {
  const channel = channelOfPath(c.req.path)
  if (!channel || err.status >= 500) return
  const settings = settingsFor(c.env)
  countDecision(
    flushTargetOf(settings, (promise) => waitUntil(c, promise)),
    { channel, decision: 'rejected', decidedBy: 'gateway', reason: refusalReason(err) },
  )
}

export default {
  fetch: app.fetch,
  /** The spool queue and its dead-letter queue (worker/spool/consumer.ts). */
  queue: consumeQueue,
  /** Cloudflare Email Routing (worker/email.ts): a throw is a temporary SMTP error. */
  email: handleEmail,
} satisfies ExportedHandler<Env>
