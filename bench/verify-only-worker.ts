/**
 * Baseline Worker for `npm run bench`: the gateway's webhook routes up to and including signature
 * verification (config, bounded body, the channel's verifier, all from worker/), then an empty 200.
 * No parsing, no Redis, no origin. What the duplicate storm is compared against: the cost of a
 * request that does nothing but prove it came from the vendor.
 *
 * Not part of the production Worker; bundled from bench/verify-only.wrangler.toml.
 * @module
 */
import { Hono } from 'hono'
import { verifySlackTenant } from '../worker/channels/slack'
import { verifyTelegramBot } from '../worker/channels/telegram'
import { verifyTwilioTenant } from '../worker/channels/twilio'
import type { Env } from '../worker/env'
import { GatewayError } from '../worker/errors'
import { verifiedRequest } from '../worker/gateway'

const app = new Hono<{ Bindings: Env }>()
const ok = () => new Response(null, { status: 200 })

app.post('/webhooks/slack', async (c) => {
  await verifiedRequest(
    c,
    'slack',
    (s) => s.slack,
    (parts, config) => verifySlackTenant(parts, config.signingSecrets),
  )
  return ok()
})

app.post('/webhooks/twilio', async (c) => {
  await verifiedRequest(
    c,
    'twilio',
    (s) => s.twilio,
    (parts, config) =>
      verifyTwilioTenant(parts, config.authTokens, { publicBaseUrl: config.publicBaseUrl }),
  )
  return ok()
})

app.post('/webhooks/telegram', async (c) => {
  await verifiedRequest(
    c,
    'telegram',
    (s) => s.telegram,
    (parts, config) => verifyTelegramBot(parts, config.secretTokens, config.pathlessBotId),
  )
  return ok()
})

app.get('/healthz', (c) => c.json({ ok: true }))

app.onError((err, c) => {
  if (err instanceof GatewayError) {
    return c.json({ error: { code: err.code, message: err.publicMessage } }, err.status)
  }
  return c.json({ error: { code: 'internal_error', message: 'internal error' } }, 500)
})

export default { fetch: app.fetch } satisfies ExportedHandler<Env>
