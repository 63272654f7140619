/**
 * Rotating ORIGIN_KEKS: with the new key first in the list (`new:…,old:…`), every stored secret
 * still wrapped by an older key is re-wrapped by the new one (shared/envelope.ts `rewrap`: the
 * data key only; no secret is decrypted, no connection changes version, the edge copy is
 * unaffected). Once it reports none left, the old key can leave the list.
 * @module
 */

import { rewrap } from '../../shared/envelope'
import { appendAudit } from './audit'
import { type Actor, type ConnectionServiceDeps, requireKeys } from './deps'

const REWRAP_BATCH = 500

/** Re-wraps every secret not under the current KEK; returns how many. Audited once, under `*`. */
export async function rewrapSecrets(deps: ConnectionServiceDeps, actor: Actor): Promise<number> {
  const ring = requireKeys(deps)
  const current = `v1.${ring.currentId}.`
  let total = 0
  for (;;) {
    const rows = await deps.db.query<{ seq: string; sealed: string }>(
      `SELECT seq::text, sealed FROM connection_secrets WHERE left(sealed, $1) <> $2
        ORDER BY seq LIMIT $3`,
      [current.length, current, REWRAP_BATCH],
    )
    if (rows.length === 0) break
    for (const row of rows) {
      await deps.db.query(
        'UPDATE connection_secrets SET sealed = $2 WHERE seq = $1 AND sealed = $3',
        [row.seq, await rewrap(ring, row.sealed), row.sealed],
      )
    }
    total += rows.length
  }
  await appendAudit(deps.db, {
    connectionId: '*',
    action: 'rewrap',
    actor,
    detail: { secrets: total, kek: ring.currentId },
  })
  return total
}
