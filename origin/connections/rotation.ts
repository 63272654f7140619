/**
 * Rotation with overlap: a new secret becomes a field's current one and the one it replaces
 * verifies until `now + overlap` (default 24 h; 0 retires it at once), at most two per field. A
 * secret past its end is dropped at the next change, and {@link expireSecrets} makes that change
 * for every connection that has one (the publisher runs it), so the edge record loses it too; the
 * edge also ignores an expired one by itself (contract/connection.ts `secretLive`).
 * @module
 */
import { CONNECTION_ID, CONNECTION_LIMITS } from '../../contract/connection'
import { applyChange } from './change'
import { type Actor, type ConnectionServiceDeps, nowOf, requireKeys, viewOf } from './deps'
import { notFound } from './errors'
import { parseRotateInput } from './model'
import { apiIdOf, isLive, openSecret, type StoredSecret, sealSecret } from './secrets'
import { type ConnectionRecord, getConnection } from './store'
import type { ConnectionView } from './views'

/** Adds a new secret per field given (model.ts `parseRotateInput`). */
export async function rotateConnection(
  deps: ConnectionServiceDeps,
  id: string,
  input: unknown,
  actor: Actor,
): Promise<ConnectionView & { generated?: Record<string, string> }> {
  const ring = requireKeys(deps)
  const found = CONNECTION_ID.test(id) ? await getConnection(deps.db, id) : null
  if (!found) throw notFound()
  const draft = parseRotateInput(found.channel, input)
  const added = await Promise.all(
    Object.entries(draft.secrets).map(([field, value]) => sealSecret(ring, id, field, value)),
  )
  await applyChange(deps.db, id, 'rotate', actor, async (current) => {
    const now = nowOf(deps)
    const end = new Date(now + draft.overlapSeconds * 1000)
    const drop: StoredSecret[] = []
    const ended: { kid: string; at: Date }[] = []
    for (const field of Object.keys(draft.secrets)) {
      const live = current.secrets.filter((s) => s.field === field && isLive(s, now))
      drop.push(...current.secrets.filter((s) => s.field === field && !isLive(s, now)))
      // The newest live ones stay beside the new one, up to the bound, each ending by `end`.
      const keep =
        draft.overlapSeconds > 0 ? live.slice(0, CONNECTION_LIMITS.secretsPerField - 1) : []
      drop.push(...live.filter((s) => !keep.includes(s)))
      for (const s of keep) {
        if (s.notAfter === null || s.notAfter > end) ended.push({ kid: s.kid, at: end })
      }
    }
    return {
      add: added,
      drop: drop.map((s) => s.kid),
      end: ended,
      ids: await apiIds(deps, current, drop, added),
      detail: {
        added: added.map((s) => ({ field: s.field, kid: s.kid, fingerprint: s.fingerprint })),
        ended: ended.map((e) => ({ kid: e.kid, notAfter: e.at.toISOString() })),
        dropped: drop.map((s) => s.kid),
        overlapSeconds: draft.overlapSeconds,
      },
    }
  })
  const view = await viewOf(deps, id)
  if (!draft.generated?.length) return view
  const generated = Object.fromEntries(draft.generated.map((f) => [f, draft.secrets[f] ?? '']))
  return { ...view, generated }
}

/**
 * An API connection's ids follow its keys (their hashes): a dropped key's hash goes, a new one's
 * comes. Undefined for every other channel (its ids do not change).
 */
async function apiIds(
  deps: ConnectionServiceDeps,
  current: ConnectionRecord,
  dropped: readonly StoredSecret[],
  added: readonly { field: string; sealed: string; kid: string }[],
): Promise<string[] | undefined> {
  if (current.channel !== 'api') return undefined
  const ring = requireKeys(deps)
  const hashes = async (list: readonly { field: string; kid: string; sealed: string }[]) => {
    const all = await Promise.all(
      list.map(async (s) => apiIdOf(s.field, await openSecret(ring, current.id, s))),
    )
    return all.filter((hash): hash is string => hash !== null)
  }
  const gone = new Set(await hashes(dropped))
  const fresh = await hashes(added)
  return [...new Set([...current.ids.filter((h) => !gone.has(h)), ...fresh])]
}

/** Connections one {@link expireSecrets} pass looks at, at most. */
const EXPIRE_BATCH = 100

/**
 * Drops every secret past its end, one change per connection (audited as `expire`, published).
 * Returns how many connections changed; one with nothing left to drop (another pod's pass was
 * first) is not changed at all.
 */
export async function expireSecrets(deps: ConnectionServiceDeps, actor: Actor = 'registry') {
  requireKeys(deps)
  const due = await deps.db.query<{ connection_id: string }>(
    `SELECT DISTINCT connection_id FROM connection_secrets WHERE not_after <= $1 LIMIT $2`,
    [new Date(nowOf(deps)), EXPIRE_BATCH],
  )
  let changed = 0
  for (const { connection_id: id } of due) {
    try {
      await applyChange(deps.db, id, 'expire', actor, async (current) => {
        const now = nowOf(deps)
        const drop = current.secrets.filter((s) => !isLive(s, now))
        // Another pod's pass dropped them first (each pod runs this): no version, audit or outbox.
        if (drop.length === 0) throw new NothingExpired()
        return {
          drop: drop.map((s) => s.kid),
          ids: await apiIds(deps, current, drop, []),
          detail: { dropped: drop.map((s) => s.kid) },
        }
      })
      changed++
    } catch (err) {
      if (!(err instanceof NothingExpired)) throw err
    }
  }
  return changed
}

/** Thrown inside the change's transaction to write nothing (applyChange rolls it back). */
class NothingExpired extends Error {}
