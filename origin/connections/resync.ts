/**
 * Resync: every connection queued for the edge again (one publication row each, at its current
 * version), for a fresh KV namespace, a new EDGE_KEKS key, or an edge that lost writes. The
 * publisher coalesces and writes them in bulk like any change.
 * @module
 */
import type { Actor, ConnectionServiceDeps } from './deps'
import { requireKeys } from './deps'
import { appendAudit } from './store'

/** Queues every connection; returns how many. Audited once, under connection id `*`. */
export async function resyncAll(deps: ConnectionServiceDeps, actor: Actor): Promise<number> {
  requireKeys(deps)
  return deps.db.transaction(async (tx) => {
    const rows = await tx.query<{ n: number }>(
      `WITH queued AS (
         INSERT INTO connection_publications (connection_id, version, kind)
         SELECT id, version, 'put' FROM connections RETURNING 1)
       SELECT count(*)::int AS n FROM queued`,
    )
    const queued = rows[0]?.n ?? 0
    await appendAudit(tx, { connectionId: '*', action: 'resync', actor, detail: { queued } })
    return queued
  })
}
