/**
 * The registry of channel connections: what the admin API (http.ts), the console and the CLI
 * (cli.ts) all call. Input is untrusted JSON, checked by model.ts; every change is one
 * transaction with its audit row and its publication row (change.ts); every answer is a view
 * (views.ts) that shows a secret only by its fingerprint. Errors are {@link ConnectionError}s
 * with stable codes; database errors propagate as the origin's own.
 * @module
 */

import {
  CONNECTION_ID,
  CONNECTION_KINDS,
  type ConnectionChannel,
  type ConnectionStatus,
  newConnectionId,
} from '../../contract/connection'
import { appendAudit, auditOf } from './audit'
import { applyChange, applyDelete, claimIds } from './change'
import { type Actor, type ConnectionServiceDeps, nowOf, requireKeys, viewOf } from './deps'
import { ConnectionError, invalid, notFound } from './errors'
import { type ConnectionDraft, parseConnectionInput, parseUpdateInput } from './model'
import { apiIdOf, sealSecret } from './secrets'
import * as store from './store'
import { type ConnectionDetail, type ConnectionPage, type ConnectionView, toView } from './views'

export { type Actor, type ConnectionServiceDeps, viewOf as connectionView } from './deps'
export { ConnectionError, type ConnectionErrorCode } from './errors'
export { expireSecrets, rotateConnection } from './rotation'
export type {
  AuditView,
  ConnectionDetail,
  ConnectionPage,
  ConnectionView,
  SecretView,
} from './views'

export const LIST_LIMIT_MAX = 200

/** A generated secret, answered once by the create or rotate that made it. */
export interface WithGenerated {
  generated?: Record<string, string>
}

/** The view of connection `id` as it is now. @throws connection_not_found */
export async function showConnection(
  deps: ConnectionServiceDeps,
  id: string,
): Promise<ConnectionDetail> {
  const record = CONNECTION_ID.test(id) ? await store.getConnection(deps.db, id) : null
  if (!record) throw notFound()
  const audit = (await auditOf(deps.db, id)).map((a) => ({ ...a, at: a.at.toISOString() }))
  return { ...toView(record, nowOf(deps)), audit }
}

export interface ListQuery {
  channel?: string
  status?: string
  account?: string
  after?: string
  /** @default 50, at most {@link LIST_LIMIT_MAX} */
  limit?: number
}

/** A page of connections by id. @throws connection_invalid naming the query field */
export async function listConnections(
  deps: ConnectionServiceDeps,
  query: ListQuery = {},
): Promise<ConnectionPage> {
  const limit = query.limit ?? 50
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > LIST_LIMIT_MAX) {
    throw invalid('limit', `from 1 to ${LIST_LIMIT_MAX}`)
  }
  if (query.channel !== undefined && !(query.channel in CONNECTION_KINDS)) {
    throw invalid('channel', 'not a channel of the registry')
  }
  if (query.status !== undefined && !['active', 'disabled'].includes(query.status)) {
    throw invalid('status', 'active or disabled')
  }
  if (query.after !== undefined && !CONNECTION_ID.test(query.after)) {
    throw invalid('after', 'a connection id')
  }
  if (query.account !== undefined && query.account.length > 320) {
    throw invalid('account', 'at most 320 characters')
  }
  const rows = await store.listConnections(deps.db, {
    channel: query.channel as ConnectionChannel | undefined,
    status: query.status as ConnectionStatus | undefined,
    account: query.account,
    after: query.after,
    limit: limit + 1,
  })
  const page = rows.slice(0, limit)
  const now = nowOf(deps)
  return {
    connections: page.map((r) => toView(r, now)),
    next: rows.length > limit ? (page.at(-1)?.id ?? null) : null,
  }
}

/**
 * A new connection from untrusted JSON (model.ts `parseConnectionInput`). With `generate`, the
 * registry makes those secrets (generate.ts) and this answer holds them, once: `generated`.
 */
export async function createConnection(
  deps: ConnectionServiceDeps,
  input: unknown,
  actor: Actor,
): Promise<ConnectionView & WithGenerated> {
  requireKeys(deps)
  const draft = parseConnectionInput(input)
  const view = await createFromDraft(deps, draft, actor)
  if (!draft.generated?.length) return view
  const generated = draft.generated.map((f) => [f, draft.secrets[f]?.[0] ?? ''])
  return { ...view, generated: Object.fromEntries(generated) }
}

/** A checked draft (an import's) stored as a new connection. */
export async function createFromDraft(
  deps: ConnectionServiceDeps,
  draft: ConnectionDraft,
  actor: Actor,
): Promise<ConnectionView> {
  const ring = requireKeys(deps)
  const id = newConnectionId()
  const sealed: Awaited<ReturnType<typeof sealSecret>>[] = []
  for (const [field, values] of Object.entries(draft.secrets)) {
    for (const value of values) sealed.push(await sealSecret(ring, id, field, value))
  }
  const ids = [...draft.ids]
  // The API's keys are found at the edge by their hashes (worker/api/auth.ts).
  if (draft.channel === 'api') {
    for (const [field, values] of Object.entries(draft.secrets)) {
      for (const value of values) {
        const hash = await apiIdOf(field, value)
        if (hash) ids.push(hash)
      }
    }
  }
  const row = { ...draft, id, ids: [...new Set(ids)] }
  await deps.db.transaction(async (tx) => {
    await claimIds(tx, row, draft.channel === 'api' ? 'secrets.api_key' : 'ids')
    if (!(await store.insertConnection(tx, row))) {
      throw new ConnectionError(
        'connection_exists',
        `account: a ${draft.channel} connection of this account exists`,
        'account',
      )
    }
    await store.insertSecrets(tx, id, sealed)
    const detail = {
      channel: row.channel,
      account: row.account,
      ids: row.ids.length,
      status: row.status,
      secrets: sealed.map((s) => ({ field: s.field, kid: s.kid, fingerprint: s.fingerprint })),
      version: 1,
    }
    await appendAudit(tx, { connectionId: id, action: 'create', actor, detail })
    await store.appendPublication(tx, { connectionId: id, version: 1, kind: 'put', removeKeys: [] })
  })
  return viewOf(deps, id)
}

/** Sets its ids and / or settings (model.ts `parseUpdateInput`): a Slack app's new workspace. */
export async function updateConnection(
  deps: ConnectionServiceDeps,
  id: string,
  input: unknown,
  actor: Actor,
): Promise<ConnectionView> {
  requireKeys(deps)
  await applyChange(deps.db, id, 'update', actor, (current) => {
    const update = parseUpdateInput(current.channel, input)
    const settings = update.settings && Object.keys(update.settings)
    return { ...update, detail: { ids: update.ids?.length, settings } }
  })
  return viewOf(deps, id)
}

export async function disableConnection(deps: ConnectionServiceDeps, id: string, actor: Actor) {
  return setStatus(deps, id, 'disabled', actor)
}

export async function enableConnection(deps: ConnectionServiceDeps, id: string, actor: Actor) {
  return setStatus(deps, id, 'active', actor)
}

async function setStatus(
  deps: ConnectionServiceDeps,
  id: string,
  status: ConnectionStatus,
  actor: Actor,
): Promise<ConnectionView> {
  requireKeys(deps)
  const action = status === 'active' ? 'enable' : 'disable'
  await applyChange(deps.db, id, action, actor, (current) => ({
    status,
    detail: { from: current.status, to: status },
  }))
  return viewOf(deps, id)
}

/**
 * Deletes it (its secrets with it; its audit trail and every message row it let in stay); the
 * publisher deletes its edge record and index entries.
 */
export async function deleteConnection(
  deps: ConnectionServiceDeps,
  id: string,
  actor: Actor,
): Promise<{ id: string; deleted: true }> {
  requireKeys(deps)
  await applyDelete(deps.db, id, actor)
  return { id, deleted: true }
}

export type ImportOutcome =
  | { status: 'created'; channel: ConnectionChannel; account: string; id: string }
  | { status: 'exists'; channel: ConnectionChannel; account: string; id: string }
  | {
      status: 'refused'
      channel: ConnectionChannel
      account: string
      field?: string
      reason: string
    }

/**
 * Drafts (import.ts reads them off today's variables) as connections; an account already in the
 * registry is left as it is and reported: running an import twice changes nothing.
 */
export async function importConnections(
  deps: ConnectionServiceDeps,
  drafts: readonly ConnectionDraft[],
  actor: Actor,
): Promise<ImportOutcome[]> {
  requireKeys(deps)
  const outcomes: ImportOutcome[] = []
  for (const draft of drafts) {
    const { channel, account } = draft
    const existing = await store.connectionByAccount(deps.db, channel, account)
    if (existing) {
      outcomes.push({ status: 'exists', channel, account, id: existing })
      continue
    }
    try {
      const created = await createFromDraft(deps, draft, actor)
      outcomes.push({ status: 'created', channel, account, id: created.id })
    } catch (err) {
      if (!(err instanceof ConnectionError) || err.code === 'registry_disabled') throw err
      outcomes.push({ status: 'refused', channel, account, field: err.field, reason: err.message })
    }
  }
  return outcomes
}
