/**
 * A connection as the edge holds it (contract/connection.ts EdgeConnectionSchema, the KV value of
 * `conn:<id>`) and the index keys that lead to it (`idx:<channel>:<id>` -> its id). The secrets
 * are opened with ORIGIN_KEKS and sealed again with EDGE_KEKS under the same additional data:
 * KV never holds a plaintext, and a KV reader without EDGE_KEKS learns nothing.
 * @module
 */
import * as v from 'valibot'
import {
  CONNECTION_KINDS,
  CONNECTION_LIMITS,
  type ConnectionChannel,
  type ConnectionKind,
  type EdgeConnection,
  EdgeConnectionSchema,
  kvKeys,
  secretAad,
} from '../../contract/connection'
import { type KeyRing, seal } from '../../shared/envelope'
import { isLive, openSecret } from './secrets'
import type { ConnectionRecord } from './store'

/**
 * The external ids the edge finds this connection by, as its kind's `index` says
 * (contract/connection.ts): its account (every webhook kind whose shared path names its account,
 * so the edge asks the registry before the variables, a disabled connection included), its ids
 * (Meta pages and numbers, API key hashes: never an API tenant's account, which could spell a
 * key hash), or both (a mailbox and its aliases: the Worker looks up a mail's envelope recipient).
 * One owner each: the table's UNIQUE (channel, account) and the ids' claims.
 */
export function indexKeys(c: {
  channel: ConnectionChannel
  account: string
  ids: readonly string[]
}) {
  const kind: ConnectionKind = CONNECTION_KINDS[c.channel]
  const byAccount = kind.index === 'account' || kind.index === 'mailbox'
  const byIds = kind.index === 'ids' || kind.index === 'mailbox'
  const keys = [...(byAccount ? [c.account] : []), ...(byIds ? c.ids : [])]
  return [...new Set(keys.map((id) => kvKeys.index(c.channel, id)))]
}

/** Every KV key a connection owns: its record and its index entries. */
export const edgeKeys = (c: Parameters<typeof indexKeys>[0] & { id: string }) => [
  kvKeys.connection(c.id),
  ...indexKeys(c),
]

/**
 * The edge record of `c` at `nowMs`: expired secrets left out, the rest sealed with EDGE_KEKS.
 * `withSecrets: false` leaves them all out (a disabled connection needs none; one whose secrets
 * ORIGIN_KEKS cannot open still publishes its status, publisher.ts).
 */
export async function edgeRecord(
  c: ConnectionRecord,
  keys: { origin: KeyRing; edge: KeyRing },
  nowMs: number,
  withSecrets = true,
): Promise<EdgeConnection> {
  const secrets = []
  for (const secret of withSecrets ? c.secrets : []) {
    if (!isLive(secret, nowMs)) continue
    const plaintext = await openSecret(keys.origin, c.id, secret)
    secrets.push({
      field: secret.field,
      kid: secret.kid,
      notAfter: secret.notAfter?.toISOString() ?? null,
      sealed: await seal(keys.edge, plaintext, secretAad(c.id, secret.field, secret.kid)),
    })
  }
  const record: EdgeConnection = {
    v: 1,
    id: c.id,
    channel: c.channel,
    account: c.account,
    ids: [...c.ids],
    settings: { ...c.settings },
    status: c.status,
    version: c.version,
    secrets,
  }
  // What the Worker will parse: a record it would refuse is a bug here, not a record to publish.
  const parsed = v.safeParse(EdgeConnectionSchema, record)
  if (!parsed.success) {
    const path = parsed.issues[0]?.path?.map((p) => String(p.key)).join('.') ?? '(record)'
    throw new Error(`edge record of ${c.id} does not match the contract at ${path}`)
  }
  const checked = parsed.output
  if (JSON.stringify(checked).length > CONNECTION_LIMITS.recordBytes) {
    throw new Error(`edge record of ${c.id} exceeds ${CONNECTION_LIMITS.recordBytes} bytes`)
  }
  return checked
}
