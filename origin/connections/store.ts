/**
 * The registry's SQL (migrations/…_connections.sql). The service (service.ts) runs each change as
 * one transaction of these statements: the connection, its secrets, its audit row and its
 * publication row commit together or not at all. Secrets go in and out sealed only.
 * @module
 */
import type { ConnectionChannel, ConnectionStatus } from '../../contract/connection'
import type { Queryable } from '../db'
import type { StoredSecret } from './secrets'

export interface ConnectionRow {
  id: string
  channel: ConnectionChannel
  account: string
  ids: string[]
  settings: Record<string, string>
  status: ConnectionStatus
  version: number
  createdAt: Date
  updatedAt: Date
  edgeVersion: number | null
  edgeSeenAt: Date | null
  /** The newest version the publisher wrote to the edge, and when; null before the first. */
  publishedVersion: number | null
  publishedAt: Date | null
  /** A change not yet written to the edge. */
  publishPending: boolean
}

export interface ConnectionRecord extends ConnectionRow {
  /** Each field's secrets, current first, then as given. */
  secrets: StoredSecret[]
}

const COLUMNS = `c.id, c.channel, c.account, c.ids, c.settings, c.status, c.version::int AS version,
  c.created_at, c.updated_at, c.edge_version::int AS edge_version, c.edge_seen_at,
  pub.version::int AS published_version, pub.published_at,
  EXISTS (SELECT 1 FROM connection_publications p
           WHERE p.connection_id = c.id AND p.published_at IS NULL) AS publish_pending`
const PUBLISHED = `LEFT JOIN LATERAL (
  SELECT p.version, p.published_at FROM connection_publications p
   WHERE p.connection_id = c.id AND p.published_at IS NOT NULL
   ORDER BY p.id DESC LIMIT 1) pub ON true`

type Row = Record<string, unknown>

function toRow(r: Row): ConnectionRow {
  return {
    id: r.id as string,
    channel: r.channel as ConnectionChannel,
    account: r.account as string,
    ids: r.ids as string[],
    settings: r.settings as Record<string, string>,
    status: r.status as ConnectionStatus,
    version: r.version as number,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
    edgeVersion: (r.edge_version as number | null) ?? null,
    edgeSeenAt: (r.edge_seen_at as Date | null) ?? null,
    publishedVersion: (r.published_version as number | null) ?? null,
    publishedAt: (r.published_at as Date | null) ?? null,
    publishPending: r.publish_pending === true,
  }
}

export async function secretsOf(db: Queryable, ids: readonly string[]) {
  const rows = await db.query<Row>(
    `SELECT connection_id, field, kid, sealed, fingerprint, not_after, created_at
       FROM connection_secrets WHERE connection_id = ANY($1)
      ORDER BY connection_id, field, not_after DESC NULLS FIRST, seq`,
    [ids],
  )
  const byConnection = new Map<string, StoredSecret[]>()
  for (const r of rows) {
    const list = byConnection.get(r.connection_id as string) ?? []
    list.push({
      field: r.field as string,
      kid: r.kid as string,
      sealed: r.sealed as string,
      fingerprint: r.fingerprint as string,
      notAfter: (r.not_after as Date | null) ?? null,
      createdAt: r.created_at as Date,
    })
    byConnection.set(r.connection_id as string, list)
  }
  return byConnection
}

/** One connection with its secrets; `forUpdate` locks its row for the transaction's change. */
export async function getConnection(
  db: Queryable,
  id: string,
  forUpdate = false,
): Promise<ConnectionRecord | null> {
  if (forUpdate) await db.query('SELECT 1 FROM connections WHERE id = $1 FOR UPDATE', [id])
  const rows = await db.query<Row>(
    `SELECT ${COLUMNS} FROM connections c ${PUBLISHED} WHERE c.id = $1`,
    [id],
  )
  if (!rows[0]) return null
  return { ...toRow(rows[0]), secrets: (await secretsOf(db, [id])).get(id) ?? [] }
}

/** Several connections by id, with their secrets (absent ones are left out). */
export async function getConnections(db: Queryable, ids: readonly string[]) {
  const rows = await db.query<Row>(
    `SELECT ${COLUMNS} FROM connections c ${PUBLISHED} WHERE c.id = ANY($1)`,
    [ids],
  )
  return new Map((await withSecrets(db, rows)).map((c) => [c.id, c]))
}

async function withSecrets(db: Queryable, rows: Row[]): Promise<ConnectionRecord[]> {
  const secrets = await secretsOf(
    db,
    rows.map((r) => r.id as string),
  )
  return rows.map((r) => ({ ...toRow(r), secrets: secrets.get(r.id as string) ?? [] }))
}

export interface ListFilter {
  channel?: ConnectionChannel
  status?: ConnectionStatus
  account?: string
  /** Keyset cursor: connections whose id sorts after this one. */
  after?: string
  limit: number
}

/** A page of connections by id, with their secrets (fingerprints are all a view shows). */
export async function listConnections(db: Queryable, filter: ListFilter) {
  const rows = await db.query<Row>(
    `SELECT ${COLUMNS} FROM connections c ${PUBLISHED}
      WHERE ($1::text IS NULL OR c.channel = $1) AND ($2::text IS NULL OR c.status = $2)
        AND ($3::text IS NULL OR c.account = $3) AND ($4::text IS NULL OR c.id > $4)
      ORDER BY c.id LIMIT $5`,
    [
      filter.channel ?? null,
      filter.status ?? null,
      filter.account ?? null,
      filter.after ?? null,
      filter.limit,
    ],
  )
  return withSecrets(db, rows)
}

export async function connectionByAccount(
  db: Queryable,
  channel: ConnectionChannel,
  account: string,
): Promise<string | null> {
  const rows = await db.query<{ id: string }>(
    'SELECT id FROM connections WHERE channel = $1 AND account = $2',
    [channel, account],
  )
  return rows[0]?.id ?? null
}

/**
 * Serializes the changes of one channel's ids (two creates claiming one Meta page): held until
 * the transaction ends. Changes of different channels do not wait for each other.
 */
export async function lockChannel(tx: Queryable, channel: ConnectionChannel): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock(hashtext('connections:' || $1))", [channel])
}

/** The ids of `ids` another connection of the channel already lists. */
export async function idsTaken(
  tx: Queryable,
  channel: ConnectionChannel,
  ids: readonly string[],
  exceptId: string,
): Promise<string[]> {
  if (ids.length === 0) return []
  const rows = await tx.query<{ id: string }>(
    `SELECT DISTINCT unnest(ids) AS id FROM connections
      WHERE channel = $1 AND id <> $3 AND ids && $2::text[]`,
    [channel, ids, exceptId],
  )
  const wanted = new Set(ids)
  return rows.map((r) => r.id).filter((id) => wanted.has(id))
}

/** The accounts of `accounts` another connection of the channel has (a mailbox's aliases). */
export async function accountsTaken(
  tx: Queryable,
  channel: ConnectionChannel,
  accounts: readonly string[],
  exceptId: string,
): Promise<string[]> {
  if (accounts.length === 0) return []
  const rows = await tx.query<{ account: string }>(
    'SELECT account FROM connections WHERE channel = $1 AND id <> $3 AND account = ANY($2::text[])',
    [channel, accounts, exceptId],
  )
  return rows.map((r) => r.account)
}

export interface NewConnection {
  id: string
  channel: ConnectionChannel
  account: string
  ids: string[]
  settings: Record<string, string>
  status: ConnectionStatus
}

/** Inserts the row (version 1); false when the (channel, account) is taken. */
export async function insertConnection(tx: Queryable, c: NewConnection): Promise<boolean> {
  const rows = await tx.query(
    `INSERT INTO connections (id, channel, account, ids, settings, status)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (channel, account) DO NOTHING RETURNING id`,
    [c.id, c.channel, c.account, c.ids, JSON.stringify(c.settings), c.status],
  )
  return rows.length > 0
}

export interface ConnectionChange {
  status: ConnectionStatus
  ids: string[]
  settings: Record<string, string>
}

/** The next version of a connection, as `change` says; returns the new version. */
export async function bumpConnection(
  tx: Queryable,
  id: string,
  change: ConnectionChange,
): Promise<number> {
  const rows = await tx.query<{ version: number }>(
    `UPDATE connections SET status = $2, ids = $3, settings = $4, version = version + 1,
            updated_at = now()
      WHERE id = $1 RETURNING version::int AS version`,
    [id, change.status, change.ids, JSON.stringify(change.settings)],
  )
  if (!rows[0]) throw new Error('connection vanished inside its own transaction')
  return rows[0].version
}

export async function insertSecrets(
  tx: Queryable,
  connectionId: string,
  secrets: readonly Omit<StoredSecret, 'createdAt'>[],
): Promise<void> {
  for (const s of secrets) {
    await tx.query(
      `INSERT INTO connection_secrets (connection_id, field, kid, sealed, fingerprint, not_after)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [connectionId, s.field, s.kid, s.sealed, s.fingerprint, s.notAfter],
    )
  }
}

export async function deleteSecrets(tx: Queryable, connectionId: string, kids: string[]) {
  if (kids.length === 0) return
  await tx.query('DELETE FROM connection_secrets WHERE connection_id = $1 AND kid = ANY($2)', [
    connectionId,
    kids,
  ])
}

export async function setNotAfter(tx: Queryable, connectionId: string, kid: string, at: Date) {
  await tx.query(
    'UPDATE connection_secrets SET not_after = $3 WHERE connection_id = $1 AND kid = $2',
    [connectionId, kid, at],
  )
}

/** Deletes the connection (its secrets go with it); messages and conversations are not touched. */
export async function deleteConnection(tx: Queryable, id: string): Promise<void> {
  await tx.query('DELETE FROM connections WHERE id = $1', [id])
}

export async function appendPublication(
  tx: Queryable,
  p: { connectionId: string; version: number; kind: 'put' | 'delete'; removeKeys: string[] },
): Promise<void> {
  await tx.query(
    `INSERT INTO connection_publications (connection_id, version, kind, remove_keys)
     VALUES ($1, $2, $3, $4)`,
    [p.connectionId, p.version, p.kind, p.removeKeys],
  )
}
