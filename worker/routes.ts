/**
 * The vendor webhook routes. Each is the same four steps (config → body → verify → parse), then
 * the channel's classification, then the shared claim / forward / answer in deliver.ts. What
 * differs is only the verifier, the parser, the replies and the response budget.
 * @module
 */
import { Hono } from 'hono'
import { classifySlack, parseSlack, verifySlackTenant } from './channels/slack'
import { classifyTelegram, parseTelegram, verifyTelegramBot } from './channels/telegram'
import { classifyTwilio, parseTwilio, verifyTwilioTenant } from './channels/twilio'
import { type ChannelReplies, handleDelivery } from './deliver'
import type { Env } from './env'
import { UnauthorizedError } from './errors'
import {
  assertVerifiedTenant,
  deliveryContext,
  type GatewayContext,
  retryLaterResponse,
  verifiedRequest,
} from './gateway'
import { logDecision } from './log'

/**
 * How long each vendor may wait for our answer, with a margin: Slack 3 s (then it retries in
 * parallel), Twilio 15 s (`tt`), Telegram 60 s. Budgets for Redis, the in-flight wait and the
 * origin are cut to fit.
 */
export const RESPONSE_BUDGET_MS = { slack: 2_500, twilio: 10_000, telegram: 10_000 } as const

const emptyOk = (): Response => new Response(null, { status: 200 })

const slackReplies: ChannelReplies = { ok: emptyOk, retryLater: retryLaterResponse }
const telegramReplies: ChannelReplies = { ok: emptyOk, retryLater: retryLaterResponse }
/** Twilio wants TwiML; an empty `<Response/>` means "no reply message". */
const twilioReplies: ChannelReplies = {
  ok: () =>
    new Response('<?xml version="1.0" encoding="UTF-8"?><Response/>', {
      status: 200,
      headers: { 'content-type': 'text/xml; charset=utf-8' },
    }),
  retryLater: retryLaterResponse,
}

export const webhooks = new Hono<{ Bindings: Env }>()

webhooks.post('/slack', async (c) => {
  const request = await verifiedRequest(
    c,
    'slack',
    (s) => s.slack,
    (parts, config) => verifySlackTenant(parts, config.signingSecrets),
  )
  const delivery = await classifySlack(
    parseSlack(request.body, c.req.header('content-type') ?? null),
  )
  if (delivery.action === 'challenge') {
    logDecision({
      channel: 'slack',
      decision: 'challenge',
      decidedBy: 'gateway',
      status: 200,
      ms: Date.now() - request.startedAt,
    })
    return c.text(delivery.challenge)
  }
  assertVerifiedTenant('slack', request, delivery)
  const ctx = deliveryContext(c, 'slack', request, slackReplies, RESPONSE_BUDGET_MS.slack)
  return handleDelivery(ctx, delivery, request.body.text)
})

webhooks.post('/twilio', async (c) => {
  const request = await verifiedRequest(
    c,
    'twilio',
    (s) => s.twilio,
    (parts, config) =>
      verifyTwilioTenant(parts, config.authTokens, { publicBaseUrl: config.publicBaseUrl }),
  )
  const delivery = classifyTwilio(parseTwilio(request.body, c.req.url))
  assertVerifiedTenant('twilio', request, delivery)
  const ctx = deliveryContext(c, 'twilio', request, twilioReplies, RESPONSE_BUDGET_MS.twilio)
  return handleDelivery(ctx, delivery, request.body.text)
})

/**
 * One bot per path (`/telegram/{botId}`, its own secret_token list); the bare `/telegram` is the
 * bot of TELEGRAM_BOT_ID (the single-tenant setup).
 */
async function telegram(c: GatewayContext, pathBotId: string | undefined): Promise<Response> {
  const request = await verifiedRequest(
    c,
    'telegram',
    (s) => s.telegram,
    (parts, config) =>
      verifyTelegramBot(parts, config.secretTokens, pathBotId ?? config.pathlessBotId),
  )
  // Telegram secrets are always per bot, so the verified tenant is the bot.
  const botId = request.tenant
  if (botId === null) throw new UnauthorizedError('telegram: no bot')
  const delivery = classifyTelegram(parseTelegram(request.body), botId)
  assertVerifiedTenant('telegram', request, delivery)
  const ctx = deliveryContext(c, 'telegram', request, telegramReplies, RESPONSE_BUDGET_MS.telegram)
  return handleDelivery(ctx, delivery, request.body.text)
}

webhooks.post('/telegram', (c) => telegram(c, undefined))
webhooks.post('/telegram/:botId', (c) => telegram(c, c.req.param('botId')))
