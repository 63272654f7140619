/**
 * One email test file's stack on the real services: a fresh migrated database behind the Neon
 * proxy with an origin in this process (test/support/origin.ts: the pollers run here too), the
 * Upstash stand-in on the real Redis with a key prefix of its own and Workers in workerd wired to
 * both (local/stack.ts), and Gmail pollers started the way `origin/main.ts` starts them
 * (`startGmailPolling` from an environment), against a fake Gmail. Everything is removed on close.
 * @module
 */
import type { Redis } from 'ioredis'
import { runId } from '../../../local/services'
import { startStack } from '../../../local/stack'
import { loadConfig } from '../../../origin/config'
import {
  type GmailConfig,
  loadGmailConfig,
  type RunningGmailPoller,
  startGmailPolling,
} from '../../../origin/gmail'
import type { PollerLimits } from '../../../origin/gmail/poller'
import { type Logger, silentLogger } from '../../../origin/log'
import type { FakeGmail } from '../../support/fake-gmail'
import { forFile } from '../../support/for-file'
import { type OriginTestbed, startOriginTestbed } from '../../support/origin'
import { type EmailWorker, startEmailWorker } from './worker'

/** Fast retries: the tests check that backoff happens, not how long it takes. */
export const TEST_LIMITS: Partial<PollerLimits> = {
  retry: { attempts: 4, baseMs: 5, maxMs: 40 },
  httpTimeoutMs: 5_000,
}

export interface PollerOptions {
  /** Leave Redis out: the poller goes straight to Postgres. */
  withoutRedis?: boolean
  owner?: string
  limits?: Partial<PollerLimits>
  pollIntervalMs?: number
  /** To look at the log lines. @default silent */
  logger?: Logger
  /** More of the origin's variables (EMAIL_MAILBOX_ALIASES). */
  env?: Record<string, string>
}

export interface EmailTestbed {
  db: OriginTestbed
  /** A client of the shared Redis (claims are under {@link EmailTestbed.prefix}). */
  redis: Redis
  /** This file's Redis key prefix (REDIS_KEY_PREFIX for the worker and the pollers). */
  prefix: string
  /** The origin's environment as a pod would have it, for a given fake Gmail. */
  originEnv(gmail: FakeGmail, options?: PollerOptions): Record<string, string>
  /** A Worker in workerd, wired to this origin and Redis prefix (stopped on close). */
  startWorker(): Promise<EmailWorker>
  /** The Worker started with the testbed (`{ worker: true }`); throws without one. */
  readonly worker: EmailWorker
  /** A poller like `origin/main.ts` starts, not polling on its own unless `start()` is called. */
  poller(gmail: FakeGmail, options?: PollerOptions): RunningGmailPoller
  /** Email message rows, by message key when given. */
  messageRows(messageKey?: string): Promise<
    Array<{
      id: string
      conversation_id: string
      channel_message_id: string
      first_delivery_key: string
    }>
  >
  close(): Promise<void>
}

export async function startEmailTestbed(options: { worker?: boolean } = {}): Promise<EmailTestbed> {
  const db = await startOriginTestbed()
  const prefix = `test:email:${runId()}:`
  const stack = await startStack({
    redis: 'shared',
    keyPrefix: prefix,
    originSecret: db.secret,
    originUrl: db.origin.url,
  }).catch(async (err) => {
    await db.close()
    throw err
  })
  const pollers: RunningGmailPoller[] = []

  const originEnv = (gmail: FakeGmail, options: PollerOptions = {}) => ({
    DATABASE_URL: db.databaseUrl,
    NEON_WS_PROXY: db.wsProxy,
    ORIGIN_SHARED_SECRET: db.secret,
    ...gmail.env,
    GMAIL_POLL_INTERVAL_MS: String(options.pollIntervalMs ?? 30_000),
    REDIS_KEY_PREFIX: prefix,
    ...options.env,
    ...(options.withoutRedis
      ? {}
      : { UPSTASH_REDIS_REST_URL: stack.redis.url, UPSTASH_REDIS_REST_TOKEN: stack.upstashToken }),
  })

  const startWorker = () =>
    startEmailWorker(stack, {
      // Generous: other test files load the same two cores; no test here measures speed.
      ORIGIN_TIMEOUT_MS: '8000',
      CLAIM_LEASE_MS: '10000',
    })
  const worker = options.worker
    ? await startWorker().catch(async (err) => {
        await stack.stop()
        await db.close()
        throw err
      })
    : undefined

  return {
    db,
    redis: stack.redisClient,
    prefix,
    originEnv,
    startWorker,
    get worker() {
      if (!worker) throw new Error('this testbed was started without a Worker')
      return worker
    },
    poller(gmail, options = {}) {
      const env = originEnv(gmail, options)
      const running = startGmailPolling({
        gmail: loadGmailConfig(env) as GmailConfig,
        origin: loadConfig(env),
        env,
        logger: options.logger ?? silentLogger,
        owner: options.owner,
        limits: { ...TEST_LIMITS, ...options.limits },
        autoStart: false,
      })
      pollers.push(running)
      return running
    },
    async messageRows(messageKey) {
      const { rows } = await db.sql.query(
        `SELECT id::text, conversation_id::text, channel_message_id, first_delivery_key
           FROM messages WHERE channel = 'email' ${messageKey ? 'AND channel_message_id = $1' : ''}
          ORDER BY id`,
        messageKey ? [messageKey] : [],
      )
      return rows
    },
    async close() {
      await Promise.all(pollers.map((p) => p.stop()))
      await stack.stop()
      await db.close()
    },
  }
}

/** This file's email testbed, started before its tests and closed after them. */
export function emailTestbedForFile(options: { worker?: boolean } = {}): EmailTestbed {
  return forFile(
    () => startEmailTestbed(options),
    (bed) => bed.close(),
    180_000,
  )
}
