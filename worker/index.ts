/**
 * The edge gateway Worker: vendor webhooks in (verified, keyed, claimed), one normalized event per
 * logical message out to the origin. Routes: POST /webhooks/{slack,twilio,telegram}, GET /healthz.
 * Errors are mapped to responses in one place, `app.onError`.
 * @module
 */
import { Hono } from 'hono'
import { handleEmail } from './channels/email'
import { settingsFor } from './config'
import type { Env } from './env'
import { GatewayError } from './errors'
import { health } from './health'
import { describeError, logProblem } from './log'
import { webhooks } from './routes'
import { runSpoolDrain } from './spool/index'

const app = new Hono<{ Bindings: Env }>()

app.route('/webhooks', webhooks)

app.get('/healthz', async (c) => c.json(await health(settingsFor(c.env))))

app.notFound((c) => c.json({ error: { code: 'not_found', message: 'not found' } }, 404))

app.onError((err, c) => {
  if (err instanceof GatewayError) {
    // The caller gets the code and a fixed message; why (which rule, which variable) is logged.
    logProblem(err.status >= 500 ? 'error' : 'warn', err.code, {
      path: c.req.path,
      detail: err.detail,
    })
    return c.json({ error: { code: err.code, message: err.publicMessage } }, err.status)
  }
  logProblem('error', 'internal_error', { path: c.req.path, detail: describeError(err) })
  return c.json({ error: { code: 'internal_error', message: 'internal error' } }, 500)
})

/**
 * Cron trigger (wrangler.toml, every minute; locally GET /cdn-cgi/handler/scheduled): drains the
 * spool of events the origin could not take (worker/spool/drain.ts), one bounded run.
 */
async function scheduled(
  _controller: ScheduledController,
  env: Env,
  _ctx: ExecutionContext,
): Promise<void> {
  await runSpoolDrain(env)
}

export default {
  fetch: app.fetch,
  scheduled,
  /** Cloudflare Email Routing (worker/channels/email.ts): a throw is a temporary SMTP error. */
  email: handleEmail,
} satisfies ExportedHandler<Env>
