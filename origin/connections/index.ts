/**
 * The connection registry's wiring for `npm run origin` (origin/main.ts): its settings, and the
 * publisher when it has what it needs (ORIGIN_KEKS, EDGE_KEKS and the Cloudflare account,
 * namespace and token); otherwise a line says what is missing and changes wait in the outbox.
 * @module
 */
import type { DatabaseSettings } from '../config'
import { openDatabase } from '../db'
import type { Logger } from '../log'
import { restPublisher } from './kv-rest'
import { type RunningPublisher, startPublisher } from './publisher'
import type { RegistryConfig } from './settings'

export { loadRegistryConfig, type RegistryConfig } from './settings'

/** The publisher's own pool: one pass at a time needs one connection (two: the expiry's too). */
const PUBLISHER_POOL_MAX = 2

/** Starts the REST publisher, or returns null (saying why) when a setting it needs is unset. */
export function startRegistryPublisher(
  registry: RegistryConfig,
  database: DatabaseSettings,
  logger: Logger,
): RunningPublisher | null {
  const { originKeys, edgeKeys, kv } = registry
  if (!originKeys) {
    logger.info('connection registry off: ORIGIN_KEKS is not set')
    return null
  }
  if (!edgeKeys || !kv) {
    const missing = !edgeKeys
      ? 'EDGE_KEKS'
      : 'CLOUDFLARE_ACCOUNT_ID / _KV_NAMESPACE_ID / _KV_API_TOKEN'
    logger.info('connections publisher off: changes wait in the outbox', { missing })
    return null
  }
  const db = openDatabase(database, PUBLISHER_POOL_MAX, logger)
  const running = startPublisher({
    db,
    originKeys,
    edgeKeys,
    kv: restPublisher(kv),
    logger,
    intervalMs: registry.publishIntervalMs,
  })
  return {
    wake: running.wake,
    async stop() {
      await running.stop()
      await db.close()
    },
  }
}
