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
import { appendAudit } from './audit'
import { edgeKeys, indexKeys } from './edge-record'
import { ConnectionError, notFound } from './errors'
import type { StoredSecret } from './secrets'
import {
  accountsTaken,
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

/**
 * Throws `connection_id_taken` naming `field` when another connection of the channel lists one.
 * A mailbox's account and aliases are one index (`idx:email:<address>`): an address is one
 * inbox's, as its account or as an alias, never two (the edge would key its mail either way).
 */
export async function claimIds(
  tx: Queryable,
  c: { id: string; channel: ConnectionChannel; ids: readonly string[]; account?: string },
  field = 'ids',
): Promise<void> {
  const kind: ConnectionKind = CONNECTION_KINDS[c.channel]
  // Only ids the edge finds a connection by must have one owner (Slack workspaces need not).
  if (kind.index !== 'ids' && kind.index !== 'mailbox') return
  const account = kind.index === 'mailbox' ? c.account : undefined
  if (c.ids.length === 0 && account === undefined) return
  await lockChannel(tx, c.channel)
  const taken = await idsTaken(tx, c.channel, c.ids, c.id)
  if (taken.length > 0) throw idTaken(field, `${taken.length} of them already belong`, c.channel)
  if (kind.index !== 'mailbox') return
  if (account !== undefined && c.ids.includes(account)) {
    throw new ConnectionError(
      'connection_invalid',
      `${field}: the mailbox itself, not an alias`,
      field,
    )
  }
  if ((await accountsTaken(tx, c.channel, c.ids, c.id)).length > 0) {
    throw idTaken(field, 'an alias is the mailbox of', c.channel)
  }
  if (account !== undefined && (await idsTaken(tx, c.channel, [account], c.id)).length > 0) {
    throw idTaken('account', 'the mailbox is an alias of', c.channel)
  }
}

function idTaken(field: string, what: string, channel: ConnectionChannel): ConnectionError {
  return new ConnectionError(
    'connection_id_taken',
    `${field}: ${what} another ${channel} connection`,
    field,
  )
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
      await claimIds(tx, { id, channel: before.channel, ids: added, account: before.account })
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
