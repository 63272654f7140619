/**
 * Baseline Worker for `npm run bench`: the gateway's webhook routes up to and including signature
 * verification (config, bounded body, the channel's verifier, all from worker/), then an empty 200.
 * No parsing, no Redis, no origin. What the duplicate storm is compared against: the cost of a
 * request that does nothing but prove it came from the vendor.
 *
 * LINE two ways, for the connections phase (bench/connections-phase.ts): `/webhooks/line/c/:id`,
 * the connection of that id read from KV (worker/connections/pick.ts `byRoute`: the memo, the
 * record's schema, its secret opened with EDGE_KEKS), and the shared `/webhooks/line` with the
 * per-bot variables (every bot's secret tried), as the gateway picks them.
 *
 * And `POST /bench/connections` (a JSON array of [key, value], at most {@link MAX_PUTS}): the phase
 * fills KV from inside workerd, where a put is far cheaper than through Miniflare's Node proxy.
 *
 * And `POST /bench/connection-steps?step=&n=` (bench/connection-steps-loop.ts): a miss's steps
 * besides the KV get, N times, timed from outside.
 *
 * Also `GET /bench/decision-counters?n=N`: N decisions through the gateway's counters
 * (bench/decision-tally-loop.ts), timed from outside by bench/decision-counters-phase.ts. Not a
 * webhook route: the baseline's own path is untouched.
 *
 * Not part of the production Worker; bundled from bench/verify-only.wrangler.toml.
 * @module
 */
import { Hono } from 'hono'
import { line } from '../worker/channels/line'
import { verifySlackTenant } from '../worker/channels/slack'
import { verifyTelegramBot } from '../worker/channels/telegram-verify'
import { verifyTwilioTenant } from '../worker/channels/twilio'
import { channelConfig } from '../worker/config'
import { byRoute } from '../worker/connections/pick'
import type { Env } from '../worker/env'
import { GatewayError } from '../worker/errors'
import { verifiedRequest } from '../worker/gateway'
import { CONNECTION_STEPS, type ConnectionStep, runConnectionStep } from './connection-steps-loop'
import { tallyDecisions } from './decision-tally-loop'

const app = new Hono<{ Bindings: Env }>()
const ok = () => new Response(null, { status: 200 })

app.post('/webhooks/slack', async (c) => {
  await verifiedRequest(
    c,
    'slack',
    (s) => ({ config: s.slack }),
    (parts, config) => verifySlackTenant(parts, config.signingSecrets),
  )
  return ok()
})

app.post('/webhooks/twilio', async (c) => {
  await verifiedRequest(
    c,
    'twilio',
    (s) => ({ config: s.twilio }),
    (parts, config) =>
      verifyTwilioTenant(parts, config.authTokens, { publicBaseUrl: config.publicBaseUrl }),
  )
  return ok()
})

app.post('/webhooks/telegram', async (c) => {
  await verifiedRequest(
    c,
    'telegram',
    (s) => ({ config: s.telegram }),
    (parts, config) => verifyTelegramBot(parts, config.secretTokens, config.pathlessBotId),
  )
  return ok()
})

app.post('/webhooks/line/c/:connection', async (c) => {
  const pick = byRoute(c.env, line, c.req.param('connection'))
  await verifiedRequest(c, 'line', pick, (parts, config) => line.verify(parts, config, {}))
  return ok()
})

app.post('/webhooks/line', async (c) => {
  await verifiedRequest(
    c,
    'line',
    (s) => ({ config: channelConfig(s, line) }),
    (parts, config) => line.verify(parts, config, {}),
  )
  return ok()
})

/** Puts per fill request: far inside Miniflare's subrequest and body bounds. */
const MAX_PUTS = 1_000

app.post('/bench/connections', async (c) => {
  const kv = c.env.CONNECTIONS
  const entries = (await c.req.json()) as unknown
  if (!kv || !Array.isArray(entries) || entries.length > MAX_PUTS) return c.json({ put: 0 }, 400)
  await Promise.all(entries.map(([key, value]: [string, string]) => kv.put(key, value)))
  return c.json({ put: entries.length })
})

/** At most this many steps per request (a second or two of CPU). */
const MAX_STEP_CALLS = 20_000

app.post('/bench/connection-steps', async (c) => {
  const step = c.req.query('step') as ConnectionStep
  const n = Math.min(MAX_STEP_CALLS, Math.max(0, Number(c.req.query('n')) || 0))
  if (!CONNECTION_STEPS.includes(step)) return c.json({ n: -1 }, 400)
  await runConnectionStep(c.env.EDGE_KEKS, step, n, await c.req.text())
  return c.json({ n })
})

app.get('/healthz', (c) => c.json({ ok: true }))

/** At most this many decisions per request: a few hundred ms of CPU, far from any limit. */
const MAX_TALLY_CALLS = 2_000_000

app.get('/bench/decision-counters', (c) => {
  const n = Math.min(MAX_TALLY_CALLS, Math.max(0, Number(c.req.query('n')) || 0))
  tallyDecisions(n, Date.now())
  return c.json({ n })
})

app.onError((err, c) => {
  if (err instanceof GatewayError) {
    return c.json({ error: { code: err.code, message: err.publicMessage } }, err.status)
  }
  return c.json({ error: { code: 'internal_error', message: 'internal error' } }, 500)
})

export default { fetch: app.fetch } satisfies ExportedHandler<Env>
