/**
 * Wiring for `origin/main.ts` (and tests that start a relay the way a pod does): from the
 * origin's configuration to a running relay with its own small database pool and its metrics on
 * the origin's registry.
 * @module
 */
import type { Registry } from 'prom-client'
import type { OriginConfig } from '../config'
import { openDatabase } from '../db'
import type { Logger } from '../log'
import type { RelayConfig } from './config'
import { createRelayMetrics } from './metrics'
import { type RunningRelay, runRelayLoop } from './relay'

export { loadRelayConfig, type RelayConfig } from './config'
export { type PassResult, type RunningRelay, relayPass } from './relay'

/** Claims, settles and scrape-time counts; the hand-offs themselves hold no connection. */
const RELAY_POOL_MAX = 3

export interface StartRelayOptions {
  relay: RelayConfig
  origin: OriginConfig
  logger: Logger
  registry?: Registry
}

export type StartedRelay = RunningRelay

export function startOutboxRelay(options: StartRelayOptions): StartedRelay {
  const { origin, logger } = options
  const db = openDatabase(origin, RELAY_POOL_MAX, logger)
  const metrics = createRelayMetrics(options.registry, db, logger)
  const loop = runRelayLoop({ db, config: options.relay, logger, metrics })
  logger.info('outbox relay started', {
    batchSize: options.relay.batchSize,
    pollIntervalMs: options.relay.pollIntervalMs,
    maxAttempts: options.relay.retry.maxAttempts,
  })
  let stopping: Promise<void> | undefined
  return {
    pass: loop.pass,
    stop() {
      stopping ??= loop.stop().then(() => db.close())
      return stopping
    },
  }
}
