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

import type { ConnectionChannel } from '../../contract/connection'
import { backoffMs } from '../../shared/backoff'
import type { KeyRing } from '../../shared/envelope'
import type { Database, Queryable } from '../db'
import { describeError } from '../errors'
import type { Logger } from '../log'
import { edgeKeys, edgeRecord } from './edge-record'
import type { KvPair, KvPublisher } from './kv'
import { expireSecrets } from './rotation'
import { type ConnectionRecord, getConnections } from './store'

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
  /**
   * Active connections whose secrets ORIGIN_KEKS cannot open: logged by id and published without
   * secrets (the edge answers the retry answer for them), so they hold no row of the outbox back.
   * Fixing ORIGIN_KEKS and running `resync` publishes them whole.
   */
  failed: number
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
    if (!lock?.locked) return { rows: 0, connections: 0, failed: 0, ran: false }
    const rows = await tx.query<PendingRow>(
      `SELECT id::text, connection_id, remove_keys FROM connection_publications
        WHERE published_at IS NULL ORDER BY id LIMIT $1`,
      [deps.batchSize ?? 2000],
    )
    if (rows.length === 0) return { rows: 0, connections: 0, failed: 0, ran: true }
    const { puts, deletes, connections, failed } = await plan(tx, deps, rows, now())
    await deps.kv.put(puts)
    await deps.kv.delete(deletes)
    // Every row is done: a connection whose secrets did not open went out without them (logged).
    const done = rows.map((r) => r.id)
    await tx.query('UPDATE connection_publications SET published_at = now() WHERE id = ANY($1)', [
      done,
    ])
    return {
      rows: done.length,
      connections,
      failed: failed.size,
      ran: true,
    }
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
  const failed = new Set<string>()
  const records = await getConnections(tx, [...stale.keys()])
  for (const [id, keys] of stale) {
    for (const key of keys) removed.add(key)
    const record = records.get(id)
    // Deleted: its delete row named every key it had.
    if (!record) continue
    const { edge, opened } = await buildRecord(deps, record, nowMs)
    if (!opened) failed.add(id)
    if (!edge) continue
    const [recordKey, ...indexKeys] = edgeKeys(record)
    puts.push({ key: recordKey as string, value: JSON.stringify(edge) })
    for (const key of indexKeys) puts.push({ key, value: id })
  }
  // A key a connection holds now (an id moved, in this batch or before it) is written, not deleted.
  const written = new Set(puts.map((p) => p.key))
  for (const [key, owner] of await indexOwners(
    tx,
    [...removed].filter((k) => !written.has(k)),
  )) {
    puts.push({ key, value: owner })
    written.add(key)
  }
  const deletes = [...removed].filter((k) => !written.has(k))
  return { puts, deletes, connections: stale.size, failed }
}

/**
 * Its edge record; a disabled connection's without secrets (the edge refuses it before verifying).
 * One whose secrets ORIGIN_KEKS cannot open is logged and published without them too: its status
 * reaches the edge (which answers the retry answer for it) and its rows do not block the outbox.
 */
async function buildRecord(deps: PublisherDeps, record: ConnectionRecord, nowMs: number) {
  const keys = { origin: deps.originKeys, edge: deps.edgeKeys }
  if (record.status === 'disabled') {
    return { edge: await edgeRecord(record, keys, nowMs, false), opened: true }
  }
  try {
    return { edge: await edgeRecord(record, keys, nowMs), opened: true }
  } catch (err) {
    deps.logger.error('connection published without secrets: its edge record could not be built', {
      connection: record.id,
      error: describeError(err).message,
    })
    // Without secrets it can still fail (a record the contract refuses: a bug): then nothing.
    const edge = await edgeRecord(record, keys, nowMs, false).catch(() => null)
    return { edge, opened: false }
  }
}

/** Of these index keys, those a connection owns now, with its id. */
async function indexOwners(tx: Queryable, keys: string[]): Promise<Map<string, string>> {
  const parsed = keys.flatMap((key) => {
    const m = /^idx:([^:]+):(.+)$/s.exec(key)
    return m ? [{ key, channel: m[1] as string, external: m[2] as string }] : []
  })
  const owners = new Map<string, string>()
  if (parsed.length === 0) return owners
  const found = await tx.query<{
    id: string
    channel: ConnectionChannel
    account: string
    ids: string[]
  }>(
    `SELECT DISTINCT c.id, c.channel, c.account, c.ids FROM connections c
       JOIN unnest($1::text[], $2::text[]) AS k(channel, external)
         ON c.channel = k.channel AND (c.account = k.external OR k.external = ANY (c.ids))`,
    [parsed.map((p) => p.channel), parsed.map((p) => p.external)],
  )
  const wanted = new Set(keys)
  for (const c of found) {
    for (const key of edgeKeys(c)) if (wanted.has(key)) owners.set(key, c.id)
  }
  return owners
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
    let failures = 0
    while (!stopped) {
      let busy = false
      try {
        const pass = await publishPending(deps)
        busy = pass.ran && pass.rows >= (deps.batchSize ?? 2000)
        failures = 0
        if (pass.rows > 0) deps.logger.info('connections published', { ...pass })
      } catch (err) {
        failures++
        deps.logger.warn('connections publish failed; rows stay pending', describeError(err))
      }
      // Failing passes back off (KV or the database away), up to a minute between tries.
      const pause =
        failures > 0
          ? backoffMs({ baseMs: deps.intervalMs, maxMs: 60_000 }, failures)
          : deps.intervalMs
      if (!stopped && !woken) await sleep(busy ? 0 : pause)
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
