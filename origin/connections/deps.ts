/**
 * What every registry call needs (the database, ORIGIN_KEKS, a clock), and the few helpers the
 * service's modules share.
 * @module
 */
import type { KeyRing } from '../../shared/envelope'
import type { Database } from '../db'
import { ConnectionError, notFound, REGISTRY_DISABLED_MESSAGE } from './errors'
import { getConnection } from './store'
import { type ConnectionView, toView } from './views'

export interface ConnectionServiceDeps {
  db: Database
  /** ORIGIN_KEKS (settings.ts `loadRegistryKeys`); null: every change is refused, 503. */
  originKeys: KeyRing | null
  /** @default Date.now */
  now?: () => number
}

/** Who made a change, in the audit trail: a console user's email, `operator (HTTP API)`, `cli`. */
export type Actor = string

/** ORIGIN_KEKS, or `registry_disabled` (503) saying how to set it. */
export function requireKeys(deps: ConnectionServiceDeps): KeyRing {
  if (!deps.originKeys) throw new ConnectionError('registry_disabled', REGISTRY_DISABLED_MESSAGE)
  return deps.originKeys
}

export const nowOf = (deps: Pick<ConnectionServiceDeps, 'now'>): number => (deps.now ?? Date.now)()

/** The view of connection `id` as it is now. */
export async function viewOf(deps: ConnectionServiceDeps, id: string): Promise<ConnectionView> {
  const record = await getConnection(deps.db, id)
  if (!record) throw notFound()
  return toView(record, nowOf(deps))
}
