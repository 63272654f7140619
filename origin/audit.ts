/**
 * The operators' audit trail (`console_audit`): who (a token's name), when, what, the result. The
 * console's sign-ins and replays write it, and so does the HTTP replay route (failures/http.ts):
 * a replay is audited whichever door it came through.
 * @module
 */
import type { Queryable } from './db'

export interface AuditEntry {
  actor: string
  action: string
  target: string
  result: string
}

export async function audit(db: Queryable, entry: AuditEntry): Promise<void> {
  await db.query(
    'INSERT INTO console_audit (actor, action, target, result) VALUES ($1, $2, $3, $4)',
    [entry.actor, entry.action, entry.target, entry.result.slice(0, 1_000)],
  )
}
