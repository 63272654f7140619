/**
 * `npm run dev`'s connections: one per webhook channel in the registry, with fixed dev-only
 * accounts and secrets (like .dev.vars.example's), created through the service's import (an
 * account already there is left as it is: a restart changes nothing). The origin's publisher
 * writes them into wrangler dev's local KV (CONNECTIONS_LOCAL_KV_DIR, origin/connections/kv-local.ts);
 * this waits, bounded, until it has, so the routes printed answer at once.
 * @module
 */

import { readDatabaseSettings } from '../origin/config'
import type { ConnectionDraft } from '../origin/connections/model'
import { importConnections } from '../origin/connections/service'
import { loadRegistryKeys } from '../origin/connections/settings'
import { openDatabase } from '../origin/db'
import { silentLogger } from '../origin/log'

const draft = (
  channel: ConnectionDraft['channel'],
  account: string,
  secrets: Record<string, string>,
  ids: string[] = [],
): ConnectionDraft => ({
  channel,
  account,
  ids,
  settings: {},
  status: 'active',
  secrets: Object.fromEntries(Object.entries(secrets).map(([field, value]) => [field, [value]])),
})

/** Dev only: never a production secret (docs/connections.md lists them for local signing). */
export const DEV_CONNECTIONS: readonly ConnectionDraft[] = [
  draft('slack', 'A0DEVCONN', { signing_secret: 'dev-slack-connection-secret' }, ['T0DEVCONN']),
  draft('twilio', `AC${'d'.repeat(32)}`, { auth_token: 'dev-twilio-connection-token' }),
  draft('telegram', '7000000001', { secret_token: 'dev-telegram-connection-secret' }),
  draft('whatsapp-cloud', '7000000011', { app_secret: 'dev-whatsapp-connection-secret' }, [
    '7000000012',
  ]),
  draft('messenger', '7000000021', { app_secret: 'dev-messenger-connection-secret' }, [
    '7000000022',
  ]),
  draft('instagram', '7000000031', { app_secret: 'dev-instagram-connection-secret' }, [
    '7000000032',
  ]),
  draft('line', `U${'d'.repeat(32)}`, { channel_secret: 'dev-line-connection-secret' }),
  draft('wechat', `gh_${'d'.repeat(12)}`, { token: 'devwechatconnection' }),
  draft('teams', '00000000-0000-4000-8000-0000000000d1', {}),
]

export interface DevConnection {
  channel: string
  id: string
}

const PUBLISHED_WAIT_MS = 15_000

/**
 * Creates (or finds) the dev connections and waits until none of theirs is pending; null with
 * the reason when the registry is off (ORIGIN_KEKS unset).
 */
export async function seedDevConnections(
  originEnv: Record<string, string | undefined>,
): Promise<{ connections: DevConnection[] } | { skipped: string }> {
  const originKeys = await loadRegistryKeys(originEnv)
  if (!originKeys) return { skipped: 'ORIGIN_KEKS unset: the registry is off' }
  if (!originEnv.EDGE_KEKS) return { skipped: 'EDGE_KEKS unset: nothing is published' }
  const problems: string[] = []
  const db = openDatabase(readDatabaseSettings(originEnv, problems), 2, silentLogger)
  try {
    const outcomes = await importConnections({ db, originKeys }, DEV_CONNECTIONS, 'npm run dev')
    const connections = outcomes.flatMap((o) =>
      'id' in o ? [{ channel: o.channel, id: o.id }] : [],
    )
    const ids = connections.map((c) => c.id)
    const until = Date.now() + PUBLISHED_WAIT_MS
    while (Date.now() < until) {
      const [row] = await db.query<{ n: string }>(
        'SELECT count(*) AS n FROM connection_publications WHERE published_at IS NULL AND connection_id = ANY($1::text[])',
        [ids],
      )
      if (Number(row?.n ?? 0) === 0) break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    return { connections }
  } finally {
    await db.close()
  }
}
