/**
 * The registry's audit trail (`connection_audit`): every change, who made it (a console user's
 * email, `operator (HTTP API)`, `cli (user@host)`, `registry`), when, and its detail: ids, kids,
 * fingerprints, versions, never a secret. Written in the change's own transaction.
 * @module
 */
import type { Queryable } from '../db'

type Row = Record<string, unknown>

export interface AuditRow {
  connectionId: string
  action: string
  actor: string
  /** Ids, kids, fingerprints, versions: never a secret. */
  detail: Record<string, unknown>
}

export async function appendAudit(tx: Queryable, row: AuditRow): Promise<void> {
  await tx.query(
    'INSERT INTO connection_audit (connection_id, action, actor, detail) VALUES ($1, $2, $3, $4)',
    [row.connectionId, row.action, row.actor.slice(0, 200), JSON.stringify(row.detail)],
  )
}

export async function auditOf(db: Queryable, connectionId: string, limit = 100) {
  const rows = await db.query<Row>(
    `SELECT action, actor, at, detail FROM connection_audit WHERE connection_id = $1
      ORDER BY id DESC LIMIT $2`,
    [connectionId, limit],
  )
  return rows.map((r) => ({
    action: r.action as string,
    actor: r.actor as string,
    at: r.at as Date,
    detail: r.detail as Record<string, unknown>,
  }))
}
