/**
 * Replays from the console, one or a filtered set, each by the replay service that
 * `npm run failures -- replay` runs (failures/replay-service.ts: a downstream row through the
 * relay's statements with its Idempotency-Key, an inbound row through the ingest of a live
 * delivery, a Gmail row fetched again): replaying twice is still one row. Each replay is audited
 * (who, when, what) with its outcome in the words the CLI prints (failures/replay-text.ts).
 *
 * A bulk replay is a `console_jobs` row: its filter, the count estimated when it started (capped),
 * its progress, a cancel flag. It runs in this process, one row at a time, walking ids upwards
 * (the cursor is stored, so nothing is replayed twice by one run); a cancel is seen before the
 * next row. Should the process stop, the job stays as it was: the page shows it stalled, and a new
 * run takes whatever is still dead.
 * @module
 */
import { audit } from '../audit'
import type { Database, Queryable } from '../db'
import { isResolved } from '../failures/replay-outcome'
import { type ReplayServiceDeps, replayFailure } from '../failures/replay-service'
import { auditResult } from '../failures/replay-text'
import type { Logger } from '../log'
import { countReplayable, type FailureFilter, nextReplayable } from './failures'

/** Rows one bulk run takes at most (a larger set: narrow the filter, or run again). */
export const BULK_MAX = 3_000
/** A running job not updated for this long is shown stalled. */
export const STALLED_AFTER_MS = 60_000

export interface ReplayResult {
  /** The row is resolved now (replayed, or before). */
  ok: boolean
  /** What the audit keeps, and the failures page's flash shows: `ok: failure {id}: …`. */
  result: string
}

/** A replay from the console: run by the replay service, then audited with its result. */
export async function auditedReplay(
  deps: ReplayServiceDeps,
  actor: string,
  id: string,
): Promise<ReplayResult> {
  let result: ReplayResult
  try {
    const outcome = await replayFailure(deps, id)
    result = { ok: isResolved(outcome), result: auditResult(outcome) }
  } catch (err) {
    const name = (err as Error).name
    result = { ok: false, result: `failed: failure ${id}: ${name}: the database did not answer` }
  }
  await audit(deps.db, { actor, action: 'replay', target: `failure ${id}`, result: result.result })
  return result
}

export interface Job {
  id: string
  filter: FailureFilter
  actor: string
  status: 'running' | 'done' | 'cancelled' | 'failed'
  total: number
  done: number
  resolved: number
  failed: number
  cancelRequested: boolean
  createdAt: Date
  updatedAt: Date
}

export async function getJob(db: Queryable, id: string): Promise<Job | null> {
  if (!/^\d{1,18}$/.test(id)) return null
  const rows = await db.query<Record<string, unknown>>(
    'SELECT * FROM console_jobs WHERE id = $1::bigint',
    [id],
  )
  const r = rows[0]
  if (!r) return null
  return {
    id: String(r.id),
    filter: r.filter as FailureFilter,
    actor: String(r.actor),
    status: r.status as Job['status'],
    total: Number(r.total),
    done: Number(r.done),
    resolved: Number(r.resolved),
    failed: Number(r.failed),
    cancelRequested: r.cancel_requested === true,
    createdAt: new Date(r.created_at as string),
    updatedAt: new Date(r.updated_at as string),
  }
}

/** The estimate the confirmation shows: rows that would be replayed, and the cap. */
export async function estimateBulkReplay(db: Queryable, filter: FailureFilter) {
  const matching = await countReplayable(db, filter)
  return { matching, willReplay: Math.min(matching, BULK_MAX) }
}

/** Starts a bulk run in the background; its id at once. */
export async function startBulkReplay(
  deps: ReplayServiceDeps & { logger: Logger },
  actor: string,
  filter: FailureFilter,
): Promise<string> {
  const { willReplay } = await estimateBulkReplay(deps.db, filter)
  const rows = await deps.db.query<{ id: string }>(
    `INSERT INTO console_jobs (filter, actor, total) VALUES ($1::jsonb, $2, $3) RETURNING id::text`,
    [JSON.stringify(filter), actor, willReplay],
  )
  const id = String(rows[0]?.id)
  await audit(deps.db, {
    actor,
    action: 'bulk_replay_started',
    target: `job ${id}`,
    result: `${willReplay} rows`,
  })
  void runJob(deps, id, actor, filter, willReplay).catch((err: unknown) => {
    deps.logger.error('bulk replay stopped', { job: id, error: (err as Error).name })
    void deps.db
      .query(`UPDATE console_jobs SET status = 'failed', updated_at = now() WHERE id = $1`, [id])
      .catch(() => {})
  })
  return id
}

export async function cancelJob(db: Queryable, id: string): Promise<void> {
  await db.query(
    `UPDATE console_jobs SET cancel_requested = true, updated_at = now()
      WHERE id = $1::bigint AND status = 'running'`,
    [id],
  )
}

async function runJob(
  deps: ReplayServiceDeps,
  id: string,
  actor: string,
  filter: FailureFilter,
  total: number,
): Promise<void> {
  let cursor = '0'
  for (let done = 0; done < total; done++) {
    if (await cancelRequested(deps.db, id)) return finish(deps.db, id, 'cancelled')
    const next = await nextReplayable(deps.db, filter, cursor)
    if (!next) break
    cursor = next
    const result = await auditedReplay(deps, actor, next)
    await deps.db.query(
      `UPDATE console_jobs
          SET done = done + 1, resolved = resolved + $2, failed = failed + $3, cursor_id = $4,
              updated_at = now()
        WHERE id = $1::bigint`,
      [id, result.ok ? 1 : 0, result.ok ? 0 : 1, next],
    )
  }
  await finish(deps.db, id, 'done')
}

async function cancelRequested(db: Database, id: string): Promise<boolean> {
  const rows = await db.query<{ c: boolean }>(
    'SELECT cancel_requested AS c FROM console_jobs WHERE id = $1::bigint',
    [id],
  )
  return rows[0]?.c === true
}

async function finish(db: Queryable, id: string, status: 'done' | 'cancelled'): Promise<void> {
  await db.query(`UPDATE console_jobs SET status = $2, updated_at = now() WHERE id = $1::bigint`, [
    id,
    status,
  ])
}
