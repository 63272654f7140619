/**
 * Wiring for `origin/main.ts` (and tests that start the poller like a pod does): from the
 * origin's configuration and environment to a running Gmail poller with its own small database
 * pool and, when UPSTASH_REDIS_REST_* are set, the worker's Redis claim store.
 * @module
 */
import type { Registry } from 'prom-client'
import { type ClaimSettings, type ClaimStore, claimStore, readClaimSettings } from '../../claims'
import type { OriginConfig, OriginEnv } from '../config'
import { openDatabase } from '../db'
import type { Logger } from '../log'
import type { GmailConfig } from './config'
import { createGmailPoller, type GmailPoller, type PollerLimits } from './poller'

export { type GmailConfig, loadGmailConfig } from './config'
export { createGmailPoller, type GmailPoller, type PollResult } from './poller'

/** The poller runs one poll at a time: a couple of connections are plenty. */
const POLLER_POOL_MAX = 2

export interface StartGmailOptions {
  gmail: GmailConfig
  origin: OriginConfig
  /** Read for the Redis settings the worker shares (UPSTASH_*, REDIS_KEY_PREFIX, ...). */
  env: OriginEnv
  logger: Logger
  registry?: Registry
  owner?: string
  limits?: Partial<PollerLimits>
  /** Start the interval loop. @default true */
  autoStart?: boolean
}

export interface RunningGmailPoller {
  poller: GmailPoller
  /** Stops polling, then closes the poller's database pool. Idempotent. */
  stop(): Promise<void>
}

/** The worker's claim store (same keys, same protocol) when UPSTASH_* are set, else null. */
export function gmailClaims(settings: ClaimSettings): ClaimStore | null {
  return claimStore(settings)
}

export function startGmailPolling(options: StartGmailOptions): RunningGmailPoller {
  const { origin, logger } = options
  const warnings: string[] = []
  const redis = readClaimSettings(options.env, warnings)
  for (const warning of warnings) logger.warn('gmail config', { warning })
  const db = openDatabase(origin, POLLER_POOL_MAX, logger)
  const claims = gmailClaims(redis)
  const poller = createGmailPoller({
    config: options.gmail,
    db,
    claims,
    logger,
    registry: options.registry,
    owner: options.owner,
    limits: options.limits,
  })
  if (options.autoStart ?? true) poller.start()
  logger.info('gmail poller started', {
    mailbox: options.gmail.mailbox,
    intervalMs: options.gmail.pollIntervalMs,
    redis: claims ? 'ok' : 'not_configured',
  })
  let stopping: Promise<void> | undefined
  return {
    poller,
    stop() {
      stopping ??= (async () => {
        await poller.stop()
        await db.close()
      })()
      return stopping
    },
  }
}
