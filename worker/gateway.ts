/**
 * Per-request wiring shared by the webhook routes: the channel's config (or a 503 naming what is
 * missing), the bounded body, the claim store, and the delivery context with its deadline.
 * @module
 */
import type { Context } from 'hono'
import { type RawBody, readBoundedBody } from './body'
import type { RequestParts, Verdict } from './channels/types'
import { type ChannelConfig, type Settings, settingsFor } from './config'
import { ClaimStore } from './dedup/claims'
import { upstashPort } from './dedup/redis'
import type { ChannelReplies, DeliveryContext } from './deliver'
import type { Env } from './env'
import { ChannelNotConfiguredError, UnauthorizedError } from './errors'

export type GatewayContext = Context<{ Bindings: Env }>

/** Steps every webhook route takes before its channel-specific parsing. */
export interface VerifiedRequest<T> {
  settings: Settings
  config: T
  body: RawBody
  startedAt: number
}

/**
 * Config check (503), bounded body (413), then the channel's verifier (401): in that order, and
 * nothing is parsed until the signature matched.
 */
export async function verifiedRequest<T>(
  c: GatewayContext,
  channel: string,
  pick: (settings: Settings) => ChannelConfig<T>,
  verify: (parts: RequestParts, config: T) => Promise<Verdict>,
): Promise<VerifiedRequest<T>> {
  const startedAt = Date.now()
  const settings = settingsFor(c.env)
  const config = pick(settings)
  if (!config.ok) throw new ChannelNotConfiguredError(channel, config.missing)
  const body = await readBoundedBody(c.req.raw, settings.maxBodyBytes)
  const verdict = await verify({ url: c.req.url, headers: c.req.raw.headers, body }, config.value)
  if (!verdict.ok) throw new UnauthorizedError(`${channel}: ${verdict.reason}`)
  return { settings, config: config.value, body, startedAt }
}

const claimStores = new WeakMap<Settings, ClaimStore>()

/** One claim store per isolate and settings (the client holds no per-request I/O). */
export function claimStoreFor(settings: Settings): ClaimStore | null {
  if (!settings.redis) return null
  let store = claimStores.get(settings)
  if (!store) {
    store = new ClaimStore(
      upstashPort(settings.redis, settings.redisTimeoutMs),
      settings,
      `${settings.redisKeyPrefix}dedup:stats`,
    )
    claimStores.set(settings, store)
  }
  return store
}

export function deliveryContext(
  c: GatewayContext,
  channel: string,
  request: VerifiedRequest<unknown>,
  replies: ChannelReplies,
  responseBudgetMs: number,
): DeliveryContext {
  const { settings, startedAt } = request
  if (!settings.origin) throw new ChannelNotConfiguredError(channel, ['ORIGIN_URL'])
  return {
    channel,
    settings,
    origin: settings.origin,
    claims: claimStoreFor(settings),
    spool: c.env.SPOOL ?? null,
    replies,
    waitUntil: (promise) => waitUntil(c, promise),
    startedAt,
    deadline: startedAt + responseBudgetMs,
  }
}

/** `ctx.waitUntil` when the runtime gave us one (tests calling `app.request` may not). */
export function waitUntil(c: GatewayContext, promise: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(promise)
  } catch {
    void promise
  }
}

/** The answer that makes Slack and Telegram deliver again (no `x-slack-no-retry`). */
export function retryLaterResponse(): Response {
  return Response.json(
    { error: { code: 'retry_later', message: 'temporarily unavailable, retry' } },
    { status: 503, headers: { 'retry-after': '1' } },
  )
}
