/**
 * Health, cheap enough to call every second from anywhere:
 * - `GET /healthz` (public): which channels are configured (degraded only for a channel in use,
 *   some of its variables set, that is not ready), whether a spool queue and the spool's R2
 *   bucket are bound, whether the origin answered its own `GET /healthz` (`ok`, `unavailable`: it
 *   answered, not healthy, or something else answered, a redirect say; `unreachable`: no answer in
 *   time; `not_configured`) and whether Redis answered, each from a probe made at most once per
 *   {@link HEALTH_CACHE_MS} per isolate (concurrent callers share one probe). No secrets, no
 *   variable names, no URLs.
 *   Always 200 while the Worker runs: without Redis it still serves (fail open), so a Redis
 *   outage is `degraded`, not down.
 * - `GET /healthz/deep` (operator, `Authorization: Bearer OPERATOR_TOKEN`): the same plus the
 *   Worker's counters from Redis (spool queued / retried / dead-lettered / delivered, payload
 *   mismatches), cached the same way. 404 when no OPERATOR_TOKEN is set, 401 for a wrong token.
 *   A Worker cannot read a queue's backlog from its binding: that is in Cloudflare's dashboard.
 * @module
 */

import type { ClaimStore } from '../claims'
import { NO_REDIRECT } from '../shared/no-redirect'
import { WEBHOOK_CHANNELS, type WebhookChannelName } from './channels'
import { channelConfig, type OriginConfig, type Settings } from './config'
import { claimStoreFor } from './gateway'

/** How long one Redis reading serves every caller of this isolate. */
export const HEALTH_CACHE_MS = 5_000

export interface Health {
  status: 'ok' | 'degraded'
  channels: Record<WebhookChannelName, boolean>
  origin: OriginHealth
  /** A spool queue is bound: origin failures are queued rather than retried by the vendor. */
  spool: boolean
  /**
   * The claim check's R2 bucket (SPOOL_BODIES) is bound: an event over a queue message can be
   * queued and dead-lettered too (without it, the vendor is asked to retry such an event).
   */
  spoolBodies: boolean
  redis: 'ok' | 'unavailable' | 'not_configured'
  redisMs?: number
  /** When the Redis reading was taken (ISO 8601). */
  checkedAt?: string
}

export interface DeepHealth extends Health {
  /** The stats hash: `spool_queued:{channel}`, `spool_dead:{channel}`, ... */
  counters?: Record<string, number>
}

export type OriginHealth = 'ok' | 'unavailable' | 'unreachable' | 'not_configured'

/** The origin's probe waits at most this (or the forward budget, if shorter). */
export const ORIGIN_PROBE_TIMEOUT_MS = 2_000

/** One cached origin probe per origin config (per isolate and settings); callers share it. */
const originProbes = new WeakMap<OriginConfig, { at: number; value: Promise<OriginHealth> }>()

function probeOrigin(origin: OriginConfig, timeoutMs: number): Promise<OriginHealth> {
  const now = Date.now()
  const cached = originProbes.get(origin)
  if (cached && now - cached.at < HEALTH_CACHE_MS) return cached.value
  const value = (async (): Promise<OriginHealth> => {
    try {
      const response = await fetch(`${origin.url}/healthz`, {
        signal: AbortSignal.timeout(Math.min(timeoutMs, ORIGIN_PROBE_TIMEOUT_MS)),
        ...NO_REDIRECT,
      })
      await response.body?.cancel().catch(() => {})
      return response.status === 200 ? 'ok' : 'unavailable'
    } catch {
      return 'unreachable'
    }
  })()
  originProbes.set(origin, { at: now, value })
  return value
}

interface Reading {
  at: number
  redis: 'ok' | 'unavailable'
  redisMs: number
  counters?: Record<string, number>
}

/** One cached reading per claim store (per isolate and settings); callers share it. */
const readings = new WeakMap<ClaimStore, { at: number; deep: boolean; value: Promise<Reading> }>()

function read(store: ClaimStore, deep: boolean): Promise<Reading> {
  const now = Date.now()
  const cached = readings.get(store)
  if (cached && now - cached.at < HEALTH_CACHE_MS && (cached.deep || !deep)) return cached.value
  const value = (async (): Promise<Reading> => {
    try {
      await store.ping()
      const counters = deep ? await store.stats().catch(() => undefined) : undefined
      return { at: now, redis: 'ok', redisMs: Date.now() - now, counters }
    } catch {
      return { at: now, redis: 'unavailable', redisMs: Date.now() - now }
    }
  })()
  readings.set(store, { at: now, deep, value })
  return value
}

/** What is bound besides the settings: the spool queue, the claim check's bucket. */
export type SpoolBindings = Pick<Health, 'spool' | 'spoolBodies'>

export async function health(settings: Settings, bound: SpoolBindings): Promise<Health> {
  const { counters: _, ...shallow } = await measure(settings, bound, false)
  return shallow
}

export function deepHealth(settings: Settings, bound: SpoolBindings): Promise<DeepHealth> {
  return measure(settings, bound, true)
}

async function measure(
  settings: Settings,
  bound: SpoolBindings,
  deep: boolean,
): Promise<DeepHealth> {
  const channels = Object.fromEntries(
    WEBHOOK_CHANNELS.map((channel) => [channel.name, channelConfig(settings, channel).ok]),
  ) as Health['channels']
  const store = claimStoreFor(settings)
  const [reading, origin] = await Promise.all([
    store ? read(store, deep) : null,
    settings.origin
      ? probeOrigin(settings.origin, settings.originTimeoutMs)
      : ('not_configured' as const),
  ])
  const redis = reading?.redis ?? 'not_configured'
  // A channel in use but not ready (a secret missing) degrades; one nobody configured does not.
  const inUseReady = [...settings.channelsInUse].every(
    (name) => channels[name as WebhookChannelName],
  )
  return {
    status:
      redis === 'ok' && inUseReady && origin === 'ok' && bound.spool && bound.spoolBodies
        ? 'ok'
        : 'degraded',
    channels,
    origin,
    ...bound,
    redis,
    ...(reading ? { redisMs: reading.redisMs, checkedAt: new Date(reading.at).toISOString() } : {}),
    ...(deep && reading?.counters ? { counters: reading.counters } : {}),
  }
}
