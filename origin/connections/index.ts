/**
 * The connection registry's wiring for `npm run origin` (origin/main.ts): its settings, its
 * gauges (metrics.ts) whenever it is on, and the publisher when it has what it needs
 * (ORIGIN_KEKS, EDGE_KEKS and the Cloudflare account, namespace and token); otherwise a line says
 * what is missing and changes wait in the outbox.
 * @module
 */

import type { Registry } from 'prom-client'
import type { DatabaseSettings } from '../config'
import { openDatabase } from '../db'
import type { Logger } from '../log'
import type { KvPublisher } from './kv'
import { localKvPublisher } from './kv-local'
import { restPublisher } from './kv-rest'
import { registerRegistryGauges } from './metrics'
import { type RunningPublisher, startPublisher } from './publisher'
import type { RegistryConfig } from './settings'

export { loadRegistryConfig, type RegistryConfig } from './settings'

/** The publisher's own pool: one pass at a time needs one connection (two: the expiry's too). */
const PUBLISHER_POOL_MAX = 2

/**
 * The registry's pool and gauges, and the REST publisher when every setting it needs is set (else
 * a line says which is missing). Null when the registry is off (no ORIGIN_KEKS).
 */
export function startRegistryPublisher(
  registry: RegistryConfig,
  database: DatabaseSettings,
  logger: Logger,
  metrics: Registry,
): RunningPublisher | null {
  const { originKeys, edgeKeys, kv } = registry
  if (!originKeys) {
    logger.info('connection registry off: ORIGIN_KEKS is not set')
    return null
  }
  const db = openDatabase(database, PUBLISHER_POOL_MAX, logger)
  registerRegistryGauges(metrics, db, logger)
  if (!edgeKeys || (!kv && !registry.localKvDir)) {
    const missing = !edgeKeys
      ? 'EDGE_KEKS'
      : 'CLOUDFLARE_ACCOUNT_ID, _KV_NAMESPACE_ID, _KV_API_TOKEN'
    logger.info('connections publisher off: changes wait in the outbox', { missing })
    return { wake: () => {}, stop: () => db.close() }
  }
  // Dev only (npm run dev sets CONNECTIONS_LOCAL_KV_DIR): wrangler dev's local KV, opened lazily.
  const local = kv ? null : localKvPublisher(registry.localKvDir as string)
  if (local) logger.info('connections publisher: local KV of wrangler dev (dev only)')
  // A failure to open it fails each pass (logged, rows left pending), never the process.
  local?.catch(() => {})
  const target: KvPublisher = kv
    ? restPublisher(kv)
    : {
        put: async (pairs) => (await (local as ReturnType<typeof localKvPublisher>)).kv.put(pairs),
        delete: async (keys) =>
          (await (local as ReturnType<typeof localKvPublisher>)).kv.delete(keys),
      }
  const running = startPublisher({
    db,
    originKeys,
    edgeKeys,
    kv: target,
    logger,
    intervalMs: registry.publishIntervalMs,
  })
  return {
    wake: running.wake,
    async stop() {
      await running.stop()
      await db.close()
      await (await local?.catch(() => null))?.dispose()
    },
  }
}
