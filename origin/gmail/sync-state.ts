/**
 * Where a mailbox's sync resumes (`gmail_sync_state.history_id`) and who may poll it now (a lease
 * on the same row), shared by every origin pod through Postgres. Each operation is one short
 * statement: nothing holds a transaction or a connection while the poller talks to Gmail (see
 * the migration for why a lease and not an advisory lock).
 *
 * - acquire: take the lease if it is free or has run out (a crashed poller's lease just expires).
 * - renew: extend it while polling; false = another pod took it over, stop.
 * - store: write the new historyId and give the lease back, fenced on still holding it, and
 *   never moving backwards.
 * - release: give it back without storing (a failed or stopped poll).
 * @module
 */
import type { Queryable } from '../db'

export interface Lease {
  /** The stored historyId; null before the first full sync. */
  historyId: string | null
}

export class SyncState {
  constructor(
    private readonly db: Queryable,
    readonly mailbox: string,
    /** This poller's identity (pod, process, instance). */
    readonly owner: string,
    private readonly leaseMs: number,
  ) {}

  /** The lease and the resume point, or null when another poller holds it. */
  async acquire(): Promise<Lease | null> {
    await this.db.query(
      'INSERT INTO gmail_sync_state (mailbox) VALUES ($1) ON CONFLICT (mailbox) DO NOTHING',
      [this.mailbox],
    )
    const rows = await this.db.query<{ history_id: string | null }>(
      `UPDATE gmail_sync_state
          SET lease_owner = $2, lease_until = now() + $3 * interval '1 millisecond',
              updated_at = now()
        WHERE mailbox = $1
          AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < now())
        RETURNING history_id::text`,
      [this.mailbox, this.owner, this.leaseMs],
    )
    const row = rows[0]
    return row ? { historyId: row.history_id } : null
  }

  /** Extends our lease; false when it is not ours any more. */
  async renew(): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE gmail_sync_state
          SET lease_until = now() + $3 * interval '1 millisecond', updated_at = now()
        WHERE mailbox = $1 AND lease_owner = $2
        RETURNING mailbox`,
      [this.mailbox, this.owner, this.leaseMs],
    )
    return rows.length === 1
  }

  /**
   * Stores `historyId` (kept if the stored one is newer) and releases the lease, only if we still
   * hold it: a poller whose lease was taken over cannot overwrite the new holder's progress.
   */
  async store(historyId: string): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE gmail_sync_state
          SET history_id = GREATEST(COALESCE(history_id, 0), $3::numeric),
              lease_owner = NULL, lease_until = NULL, updated_at = now()
        WHERE mailbox = $1 AND lease_owner = $2
        RETURNING mailbox`,
      [this.mailbox, this.owner, historyId],
    )
    return rows.length === 1
  }

  /** Gives the lease back (no-op when it is not ours). */
  async release(): Promise<void> {
    await this.db.query(
      `UPDATE gmail_sync_state SET lease_owner = NULL, lease_until = NULL, updated_at = now()
        WHERE mailbox = $1 AND lease_owner = $2`,
      [this.mailbox, this.owner],
    )
  }
}
