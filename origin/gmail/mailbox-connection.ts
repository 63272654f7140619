/**
 * The polled mailbox's connection in the registry (channel `email`: its account the inbox, its
 * ids the inbox's aliases), read from Postgres at each poll, so a change applies at the origin at
 * once. The Worker finds the same connection by a mail's envelope recipient
 * (worker/connections/mailbox.ts); both then key a mail as the connection's account, so a mail
 * that arrives both ways is one row. Where the registry names the mailbox it wins over
 * EMAIL_MAILBOX_ALIASES; where it does not, the variable keys as before.
 *
 * A disabled mailbox is not polled (Gmail keeps its mail; the first poll after an enable takes
 * it). Its events do not carry the connection as the Worker's do: the ingest guard records an
 * event's version as the one *the edge* verified with (connections/ingest-guard.ts), which a
 * poll at the origin would misreport.
 * @module
 */
import type { EventConnection } from '../../contract/connection'
import { connectionAliases, type MailboxAliases } from '../../email/mailbox'
import type { Queryable } from '../db'

export type GmailMailbox =
  | { kind: 'active'; aliases: MailboxAliases }
  /** A disabled mailbox connection: nothing is polled until it is enabled. */
  | { kind: 'disabled'; connection: EventConnection }

/** How mail polled from `mailbox` is keyed now: its connection's aliases, else `variables`. */
export async function gmailMailbox(
  db: Queryable,
  mailbox: string,
  variables: MailboxAliases,
): Promise<GmailMailbox> {
  const rows = await db.query<{
    id: string
    version: number
    status: string
    account: string
    ids: string[]
  }>(
    `SELECT id, version, status, account, ids FROM connections
      WHERE channel = 'email' AND (account = $1 OR $1 = ANY(ids))
      ORDER BY account = $1 DESC LIMIT 1`,
    [mailbox],
    { name: 'gmail-mailbox-connection' },
  )
  const row = rows[0]
  if (!row) return { kind: 'active', aliases: variables }
  const connection = { id: row.id, version: row.version }
  if (row.status !== 'active') return { kind: 'disabled', connection }
  return { kind: 'active', aliases: connectionAliases(row) }
}
