/**
 * What a front door (the webhook routes, the email handler) hands the delivery core
 * (deliver.ts): its context, built by {@link deliveryContext}; and what it gets back: an
 * Outcome (outcome.ts) per delivery, logged with the status of the reply it gave
 * ({@link logOutcome}).
 * @module
 */
import type { ClaimHold, ClaimStore } from '../claims'
import type { EventConnection } from '../contract/connection'
import type { OriginConfig, Settings } from './config'
import { countDecision, flushTargetOf } from './decision-counters'
import type { Env } from './env'
import { ChannelNotConfiguredError } from './errors'
import { claimStoreFor } from './gateway'
import { logDecision } from './log'
import type { Outcome } from './outcome'
import { breakerFor, type OriginBreaker } from './shed/breaker'
import type { EventBodies } from './spool/claim-check'
import type { DeadLetterQueue, SpoolQueue } from './spool/producer'

export interface DeliveryContext {
  /** Log label of the front door: slack | twilio | telegram | whatsapp-cloud | email. */
  channel: string
  settings: Settings
  origin: OriginConfig
  /** Null when no Redis is configured: Postgres decides everything. */
  claims: ClaimStore | null
  /** The spool queue's producer binding; null when the Worker has none. */
  spool: SpoolQueue | null
  /** The dead-letter queue: events the origin refused for good are recorded through it. */
  deadLetters: DeadLetterQueue | null
  /** The claim check's bucket (SPOOL_BODIES): events too large for a queue message; or null. */
  bodies: EventBodies | null
  /** This isolate's view of the origin: forward, or queue first-seen events (worker/shed/). */
  breaker: OriginBreaker
  waitUntil(promise: Promise<unknown>): void
  startedAt: number
  /** Epoch ms by which the sender must have its answer (Slack: 3 s, less a margin). */
  deadline: number
  /** How long this front door's `done` / `spooled` claims live (its channel's dedup TTL). */
  dedupTtlSeconds: number
  /** The webhook request the deliveries came from; absent for email. */
  received?: ReceivedRequest
  /** A replay of a kept unrecognized event: one that is still unrecognized is not kept again. */
  replaying?: boolean
  /**
   * The front door holds the delivery's claim already (the API: its Idempotency-Key middleware,
   * worker/api/routes.ts says why): the core does not claim again, it forwards under this hold.
   */
  heldClaim?: ClaimHold
  /** The connection that verified the request (worker/connections/): its decision lines name it. */
  connection?: EventConnection
}

/**
 * The verified request a webhook's deliveries came from, as an unrecognized one of them is kept
 * (worker/unrecognized.ts): who verified it, what it vouched for, and what `parse` reads.
 */
export interface ReceivedRequest {
  /** The webhook channel's name. */
  channel: string
  tenant: string | null
  scopes?: ReadonlySet<string>
  writesFor?: ReadonlySet<string>
  /** The registry's connection that verified it (worker/connections/). */
  connection?: EventConnection
  /** The request's path and query. */
  path: string
  contentType: string | null
  /** The text its `parse` reads (replayText: WeChat's decrypted push). */
  text: string
}

/** A queue send gets at least this long, even past the vendor's deadline (Slack then retries). */
const MIN_SEND_MS = 500

/** A queue send gets what is left of the sender's deadline, but never less than MIN_SEND_MS. */
export function sendBudgetMs(ctx: DeliveryContext): number {
  return Math.max(ctx.deadline - Date.now() - ctx.settings.redisTimeoutMs, MIN_SEND_MS)
}

/** What a front door knows of its delivery: its name, clock, budget and the runtime's waitUntil. */
export interface FrontDoor {
  channel: string
  startedAt: number
  /** How long the sender waits for our answer (the channel's budget). */
  budgetMs: number
  waitUntil(promise: Promise<unknown>): void
  /** The channel's own dedup TTL; default DEDUP_TTL_SECONDS. */
  dedupTtlSeconds?: number
  received?: ReceivedRequest
  replaying?: boolean
  heldClaim?: ClaimHold
  connection?: EventConnection
}

/** The one way a front door builds its context (the origin is required: 503 without it). */
export function deliveryContext(env: Env, settings: Settings, door: FrontDoor): DeliveryContext {
  if (!settings.origin) throw new ChannelNotConfiguredError(door.channel, ['ORIGIN_URL'])
  return {
    channel: door.channel,
    settings,
    origin: settings.origin,
    claims: claimStoreFor(settings),
    spool: env.SPOOL ?? null,
    deadLetters: env.SPOOL_DEAD ?? null,
    bodies: env.SPOOL_BODIES ?? null,
    breaker: breakerFor(settings.shed),
    waitUntil: door.waitUntil,
    startedAt: door.startedAt,
    deadline: door.startedAt + door.budgetMs,
    dedupTtlSeconds: door.dedupTtlSeconds ?? settings.dedupTtlSeconds,
    ...(door.received ? { received: door.received } : {}),
    ...(door.replaying ? { replaying: true } : {}),
    ...(door.heldClaim ? { heldClaim: door.heldClaim } : {}),
    ...(door.connection ? { connection: door.connection } : {}),
  }
}

/** What logging a decision needs of a front door (the API logs some before it has a context). */
export type LogTarget = Pick<DeliveryContext, 'channel' | 'settings' | 'startedAt' | 'waitUntil'> &
  Pick<Partial<DeliveryContext>, 'connection'>

/** A decision line's fields of the connection that verified its request. */
export function connectionFields(connection: EventConnection): {
  connection: string
  connectionVersion: number
} {
  return { connection: connection.id, connectionVersion: connection.version }
}

/** One decision log line for an outcome, with the status of the reply the front door gave. */
export function logOutcome(ctx: LogTarget, outcome: Outcome, status: number): void {
  // Neither a handshake's challenge nor an API answer's body goes into a log line.
  const { challenge: _, answer: __, ...fields }: Outcome & { challenge?: string } = outcome
  const line = {
    ...fields,
    channel: outcome.channel ?? ctx.channel,
    status,
    ms: Date.now() - ctx.startedAt,
    ...(ctx.connection ? connectionFields(ctx.connection) : {}),
  }
  logDecision(line)
  countDecision(flushTargetOf(ctx.settings, ctx.waitUntil), line)
}
