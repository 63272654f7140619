/**
 * One test's view of the gateway inside workerd: its own env (own origin namespace, own Redis key
 * prefix, any overrides), a way to deliver requests to the real Worker module and wait for its
 * `waitUntil` work, and read access to what the origin saw and what Redis holds.
 * @module
 */

import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test'
import { env } from 'cloudflare:workers'
import { Redis } from '@upstash/redis/cloudflare'
import { inject } from 'vitest'
import type { TallyRow } from '../../../contract/decision-counts'
import type { SignedDelivery } from '../../../local/vendor-deliveries'
import type { Env } from '../../../worker/env'
import worker from '../../../worker/index'
import type { DeadReportCall, OriginCall, OriginMode } from './fake-origin'

export const GATEWAY = 'https://gateway.test'
/** The webhook routes at {@link GATEWAY}; a Telegram bot of its own has `/{bot id}` after its. */
export const WEBHOOKS = {
  slack: `${GATEWAY}/webhooks/slack`,
  twilio: `${GATEWAY}/webhooks/twilio`,
  telegram: `${GATEWAY}/webhooks/telegram`,
} as const

/** What the test origin saw in one namespace. */
export interface OriginRecord {
  calls: OriginCall[]
  rows: number
  dead: DeadReportCall[]
  /** Each batch request (`POST /v1/events/batch`): how many events it held. */
  batches: number[]
  /** The decision counts taken (`POST /v1/decisions`), every row of every batch. */
  decisions: TallyRow[]
  /** One-time signature bindings taken (`POST /v1/signature-bindings`): key to body hash. */
  bindings: Record<string, string>
  /** Requests for the login page behind its `redirect` mode: a followed redirect lands there. */
  logins: number
  /** GET /healthz: the Worker's origin probe. */
  healthChecks: number
}

export interface Harness {
  env: Env
  /** Full Redis key of a delivery key (`dedup:...`). */
  redisKey(deliveryKey: string): string
  deliver(request: Request): Promise<Response>
  /** One attempt of a fixture's delivery (local/vendor-deliveries.ts), to the gateway. */
  send(delivery: SignedDelivery): Promise<Response>
  /** As send, and how long the answer took (before the `waitUntil` work, which send awaits). */
  sendTimed(delivery: SignedDelivery): Promise<{ response: Response; answeredMs: number }>
  originCalls(): Promise<OriginRecord>
  setOriginMode(mode: OriginMode): Promise<void>
  redisGet(deliveryKey: string): Promise<string | null>
  redisTtl(deliveryKey: string): Promise<number>
  redis: Redis
}

/**
 * `shared`: the pool's own env (origin namespace and key prefix `self`), the one the queue
 * consumer runs with when a message goes through the real queue binding. Tests that use it must
 * not overlap (the pool runs one file at a time, tests in order).
 */
export function harness(overrides: Partial<Env> = {}, options: { shared?: boolean } = {}): Harness {
  const id = options.shared ? 'self' : crypto.randomUUID().slice(0, 12)
  const originNs = `${inject('originUrl')}/ns/${id}`
  const prefix = `${inject('keyPrefix')}${id}:`
  const testEnv: Env = {
    ...(env as Env),
    ORIGIN_URL: originNs,
    REDIS_KEY_PREFIX: prefix,
    ...overrides,
  }
  const redis = new Redis({
    url: inject('redisUrl'),
    token: inject('redisToken'),
    automaticDeserialization: false,
    enableAutoPipelining: false,
    enableTelemetry: false,
  })
  async function deliverTimed(
    request: Request,
  ): Promise<{ response: Response; answeredMs: number }> {
    const ctx = createExecutionContext()
    const started = Date.now()
    const response = await worker.fetch(request, testEnv, ctx)
    const answeredMs = Date.now() - started
    await waitOnExecutionContext(ctx)
    return { response, answeredMs }
  }
  async function deliver(request: Request): Promise<Response> {
    return (await deliverTimed(request)).response
  }
  return {
    env: testEnv,
    redis,
    redisKey: (deliveryKey) => `${prefix}${deliveryKey}`,
    deliver,
    send: async (delivery) => deliver(await delivery.request(GATEWAY)),
    sendTimed: async (delivery) => deliverTimed(await delivery.request(GATEWAY)),
    async originCalls() {
      const response = await fetch(`${originNs}/calls`)
      return (await response.json()) as OriginRecord
    },
    async setOriginMode(mode) {
      await fetch(`${originNs}/mode`, { method: 'PUT', body: JSON.stringify(mode) })
    },
    redisGet: (deliveryKey) => redis.get<string>(`${prefix}${deliveryKey}`),
    redisTtl: (deliveryKey) => redis.ttl(`${prefix}${deliveryKey}`),
  }
}
