/**
 * Baseline Worker for `npm run bench`: the gateway's webhook routes up to and including signature
 * verification (config, bounded body, the channel's verifier, all from worker/), then an empty 200.
 * No parsing, no Redis, no origin. What the duplicate storm is compared against: the cost of a
 * request that does nothing but prove it came from the vendor.
 *
 * Also `GET /bench/decision-counters?n=N`: N decisions through the gateway's counters
 * (bench/decision-tally-loop.ts), timed from outside by bench/decision-counters-phase.ts. Not a
 * webhook route: the baseline's own path is untouched.
 *
 * Not part of the production Worker; bundled from bench/verify-only.wrangler.toml.
 * @module
 */
import { Hono } from 'hono'
import { verifySlackTenant } from '../worker/channels/slack'
import { verifyTelegramBot } from '../worker/channels/telegram-verify'
import { verifyTwilioTenant } from '../worker/channels/twilio'
import type { Env } from '../worker/env'
import { GatewayError } from '../worker/errors'
import { verifiedRequest } from '../worker/gateway'
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
