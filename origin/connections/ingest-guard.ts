/**
 * The origin's side of a disabled connection: KV reaches every edge location only within its
 * propagation bound (minutes), the origin's registry at once. An event that names the
 * connection it was verified with (contract/event.ts `connection`) is refused here when that
 * connection is disabled or deleted, before anything of it is stored; otherwise the version the
 * edge verified with is recorded (the console shows when a change reached the edge), at most
 * once a minute per connection unless the version moved, so the hot path adds no write per event.
 * @module
 */
import type { InboundEvent } from '../../contract/event'
import type { Queryable } from '../db'
import { ConnectionDisabledError } from '../errors'

/** Throws {@link ConnectionDisabledError} for an event of a disabled or deleted connection. */
export async function checkEventConnection(db: Queryable, event: InboundEvent): Promise<void> {
  if (!event.connection) return
  const rows = await db.query<{ status: string }>(
    `WITH seen AS (
       UPDATE connections SET edge_version = GREATEST(COALESCE(edge_version, 0), $2),
                              edge_seen_at = now()
        WHERE id = $1 AND status = 'active'
          AND (edge_version IS NULL OR edge_version < $2 OR edge_seen_at < now() - interval '60 seconds')
        RETURNING 1)
     SELECT status FROM connections WHERE id = $1`,
    [event.connection.id, event.connection.version],
    { name: 'connection-of-event' },
  )
  if (rows[0]?.status !== 'active') throw new ConnectionDisabledError()
}
