/**
 * The publisher: drains the outbox (`connection_publications`, written in each change's
 * transaction) into Workers KV through a {@link KvPublisher}. One pass takes the pending rows,
 * coalesces them per connection (so a key is written at most once a pass: KV takes one write per
 * key per second), reads each connection as it is now, writes its record and index entries in
 * bulk, deletes the keys changes made stale (a deleted connection's, an id no longer listed),
 * and marks the rows published. A failed write leaves them pending for the next pass.
 *
 * Pods may all run one: a pass holds a transaction-scoped advisory lock, so one pass at a time
 * writes, and never an older state after a newer one. Each pass first drops secrets past their
 * end (rotation.ts `expireSecrets`), so the edge record loses them as well.
 * @module
 */
import type { KeyRing } from '../../shared/envelope'
import type { Database, Queryable } from '../db'
import { describeError } from '../errors'
import type { Logger } from '../log'
import { edgeKeys, edgeRecord } from './edge-record'
import type { KvPair, KvPublisher } from './kv'
import { expireSecrets } from './rotation'
import { getConnection } from './store'

export interface PublisherDeps {
  db: Database
  originKeys: KeyRing
  /** EDGE_KEKS: what the edge records' secrets are sealed with (the Worker holds the same). */
  edgeKeys: KeyRing
  kv: KvPublisher
  logger: Logger
  /** Publication rows one pass takes at most. @default 2000 */
  batchSize?: number
  /** @default Date.now */
  now?: () => number
}

export interface PassResult {
  /** Publication rows marked published. */
  rows: number
  /** Connections written (or deleted). */
  connections: number
  /** False when another pod's pass held the lock. */
  ran: boolean
}

interface PendingRow {
  id: string
  connection_id: string
  remove_keys: string[]
}

/** One pass; throws (rows stay pending) when KV did not take the writes. */
export async function publishPending(deps: PublisherDeps): Promise<PassResult> {
  const now = deps.now ?? Date.now
  await expireSecrets({ db: deps.db, originKeys: deps.originKeys, now })
  return deps.db.transaction(async (tx) => {
    const [lock] = await tx.query<{ locked: boolean }>(
      "SELECT pg_try_advisory_xact_lock(hashtext('connections:publisher')) AS locked",
    )
    if (!lock?.locked) return { rows: 0, connections: 0, ran: false }
    const rows = await tx.query<PendingRow>(
      `SELECT id::text, connection_id, remove_keys FROM connection_publications
        WHERE published_at IS NULL ORDER BY id LIMIT $1`,
      [deps.batchSize ?? 2000],
    )
    if (rows.length === 0) return { rows: 0, connections: 0, ran: true }
    const { puts, deletes, connections } = await plan(tx, deps, rows, now())
    await deps.kv.put(puts)
    await deps.kv.delete(deletes)
    await tx.query('UPDATE connection_publications SET published_at = now() WHERE id = ANY($1)', [
      rows.map((r) => r.id),
    ])
    return { rows: rows.length, connections, ran: true }
  })
}

/** What KV must hold after these rows: each connection's current record and index, nothing stale. */
async function plan(tx: Queryable, deps: PublisherDeps, rows: PendingRow[], nowMs: number) {
  const stale = new Map<string, Set<string>>()
  for (const row of rows) {
    const keys = stale.get(row.connection_id) ?? new Set()
    for (const key of row.remove_keys) keys.add(key)
    stale.set(row.connection_id, keys)
  }
  const puts: KvPair[] = []
  const removed = new Set<string>()
  for (const [id, keys] of stale) {
    const record = await getConnection(tx, id)
    if (!record) {
      // Deleted: its delete row named every key it had.
      for (const key of keys) removed.add(key)
      continue
    }
    const edge = await edgeRecord(record, { origin: deps.originKeys, edge: deps.edgeKeys }, nowMs)
    const [recordKey, ...indexKeys] = edgeKeys(record)
    puts.push({ key: recordKey as string, value: JSON.stringify(edge) })
    for (const key of indexKeys) puts.push({ key, value: id })
    for (const key of keys) removed.add(key)
  }
  // A key another connection of this batch now holds (an id moved) is written, not deleted.
  const written = new Set(puts.map((p) => p.key))
  return { puts, deletes: [...removed].filter((k) => !written.has(k)), connections: stale.size }
}

export interface RunningPublisher {
  /** Runs a pass soon (after a change made here), without waiting for the interval. */
  wake(): void
  /** Stops after the pass in progress. */
  stop(): Promise<void>
}

/** The loop: a pass, then the interval's pause when it found nothing; errors logged, retried. */
export function startPublisher(deps: PublisherDeps & { intervalMs: number }): RunningPublisher {
  let stopped = false
  let woken = false
  let timer: NodeJS.Timeout | undefined
  let resolveSleep: (() => void) | undefined
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      resolveSleep = resolve
      timer = setTimeout(resolve, ms)
    })
  const loop = (async () => {
    while (!stopped) {
      let busy = false
      try {
        const pass = await publishPending(deps)
        busy = pass.ran && pass.rows >= (deps.batchSize ?? 2000)
        if (pass.rows > 0) deps.logger.info('connections published', { ...pass })
      } catch (err) {
        deps.logger.warn('connections publish failed; rows stay pending', describeError(err))
      }
      if (!stopped && !woken) await sleep(busy ? 0 : deps.intervalMs)
      woken = false
    }
  })()
  const wake = () => {
    woken = true
    clearTimeout(timer)
    resolveSleep?.()
  }
  return {
    wake,
    async stop() {
      stopped = true
      wake()
      await loop
    },
  }
}
