/**
 * One change of the registry as one transaction: the connection's row (its next version), its
 * secrets, its audit row and its publication row (the outbox the publisher drains) commit
 * together or not at all; a refusal (an id another connection holds) writes nothing.
 * @module
 */
import {
  CONNECTION_ID,
  CONNECTION_KINDS,
  type ConnectionChannel,
  type ConnectionKind,
} from '../../contract/connection'
import type { Database, Queryable } from '../db'
import { edgeKeys, indexKeys } from './edge-record'
import { ConnectionError, notFound } from './errors'
import type { StoredSecret } from './secrets'
import {
  appendAudit,
  appendPublication,
  bumpConnection,
  type ConnectionChange,
  type ConnectionRecord,
  deleteConnection,
  deleteSecrets,
  getConnection,
  idsTaken,
  insertSecrets,
  lockChannel,
  setNotAfter,
} from './store'

/** What a change does to a connection, decided from the locked current record. */
export interface ChangeEffect extends Partial<ConnectionChange> {
  /** Secrets added (sealed). */
  add?: Omit<StoredSecret, 'createdAt'>[]
  /** Kids removed. */
  drop?: string[]
  /** Kids given an end. */
  end?: { kid: string; at: Date }[]
  /** The audit row's detail: ids, kids, fingerprints; never a secret. */
  detail: Record<string, unknown>
}

/** Throws `connection_id_taken` naming `field` when another connection of the channel lists one. */
export async function claimIds(
  tx: Queryable,
  c: { id: string; channel: ConnectionChannel; ids: readonly string[] },
  field = 'ids',
): Promise<void> {
  const kind: ConnectionKind = CONNECTION_KINDS[c.channel]
  // Only ids the edge finds a connection by must have one owner (Slack workspaces need not).
  if (kind.index !== 'ids' || c.ids.length === 0) return
  await lockChannel(tx, c.channel)
  const taken = await idsTaken(tx, c.channel, c.ids, c.id)
  if (taken.length > 0) {
    throw new ConnectionError(
      'connection_id_taken',
      `${field}: ${taken.length} of them already belong to another ${c.channel} connection`,
      field,
    )
  }
}

/**
 * Locks connection `id`, asks `decide` what to do with it, and writes that as its next version.
 * Returns the record before and the new version.
 */
export async function applyChange(
  db: Database,
  id: string,
  action: string,
  actor: string,
  decide: (current: ConnectionRecord) => Promise<ChangeEffect> | ChangeEffect,
): Promise<{ before: ConnectionRecord; version: number }> {
  if (!CONNECTION_ID.test(id)) throw notFound()
  return db.transaction(async (tx) => {
    const before = await getConnection(tx, id, true)
    if (!before) throw notFound()
    const effect = await decide(before)
    const next: ConnectionChange = {
      status: effect.status ?? before.status,
      ids: effect.ids ?? before.ids,
      settings: effect.settings ?? before.settings,
    }
    if (effect.ids) {
      const added = effect.ids.filter((x) => !before.ids.includes(x))
      await claimIds(tx, { id, channel: before.channel, ids: added })
    }
    await deleteSecrets(tx, id, effect.drop ?? [])
    for (const { kid, at } of effect.end ?? []) await setNotAfter(tx, id, kid, at)
    await insertSecrets(tx, id, effect.add ?? [])
    const version = await bumpConnection(tx, id, next)
    const stale = indexKeys(before).filter((k) => !indexKeys({ ...before, ...next }).includes(k))
    await appendAudit(tx, {
      connectionId: id,
      action,
      actor,
      detail: { ...effect.detail, version },
    })
    await appendPublication(tx, { connectionId: id, version, kind: 'put', removeKeys: stale })
    return { before, version }
  })
}

/** Deletes connection `id`: its edge record and index entries are deleted by the publisher. */
export async function applyDelete(db: Database, id: string, actor: string): Promise<void> {
  if (!CONNECTION_ID.test(id)) throw notFound()
  await db.transaction(async (tx) => {
    const before = await getConnection(tx, id, true)
    if (!before) throw notFound()
    await deleteConnection(tx, id)
    const version = before.version + 1
    const detail = { channel: before.channel, account: before.account, version }
    await appendAudit(tx, { connectionId: id, action: 'delete', actor, detail })
    await appendPublication(tx, {
      connectionId: id,
      version,
      kind: 'delete',
      removeKeys: edgeKeys(before),
    })
  })
}
