/**
 * The failures page's data: dead letters and downstream failures (channel_failures) by channel,
 * stage, status and time, newest first, a page at a time by id (keyset: as fast on page 2,000 as
 * on page 1; index channel_failures_list_idx / _created_idx). The same filter, parsed once here,
 * serves the list, the bulk replay's estimate and its run.
 * @module
 */
import * as v from 'valibot'
import type { Queryable } from '../db'
import { FAILURE_STATUSES } from '../failures/store'

export const PAGE_SIZE = 50

const text = (max: number) =>
  v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.maxLength(max),
      v.transform((s) => s || undefined),
    ),
  )
const time = v.optional(
  v.pipe(
    v.string(),
    v.trim(),
    v.maxLength(40),
    v.transform((s) => {
      if (!s) return undefined
      const d = new Date(s.length === 16 ? `${s}:00Z` : s)
      return Number.isNaN(d.getTime()) ? undefined : d.toISOString()
    }),
  ),
)

/** The query string of the list, the bulk replay form's fields, a job's stored filter. */
export const FailureFilter = v.object({
  channel: text(32),
  stage: text(32),
  status: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => ((FAILURE_STATUSES as readonly string[]).includes(s) ? s : undefined)),
    ),
  ),
  since: time,
  until: time,
  /** Keyset cursor: rows with a smaller id (the next page). */
  before: v.optional(
    v.pipe(
      v.string(),
      v.transform((s) => (/^\d{1,18}$/.test(s) ? s : undefined)),
    ),
  ),
})
export type FailureFilter = v.InferOutput<typeof FailureFilter>

/** A filter from any string record (a query string, a form): unknown or bad values dropped. */
export function parseFilter(input: Record<string, unknown>): FailureFilter {
  const strings = Object.fromEntries(
    Object.entries(input).filter(([, value]) => typeof value === 'string'),
  )
  const parsed = v.safeParse(FailureFilter, strings)
  return parsed.success ? parsed.output : {}
}

/** The filter as query-string pairs (links to the next page, the bulk form's hidden fields). */
export function filterParams(filter: FailureFilter, omit: (keyof FailureFilter)[] = []) {
  return Object.entries(filter).filter(
    (e): e is [string, string] => e[1] !== undefined && !omit.includes(e[0] as keyof FailureFilter),
  )
}

/** WHERE clause and values of a filter; `extra` conditions come first. */
function where(filter: FailureFilter, extra: string[] = []): { sql: string; values: unknown[] } {
  const values: unknown[] = []
  const conditions = [...extra]
  const add = (sql: (n: number) => string, value: unknown) => {
    values.push(value)
    conditions.push(sql(values.length))
  }
  if (filter.channel) add((n) => `channel = $${n}`, filter.channel)
  if (filter.stage) add((n) => `stage = $${n}`, filter.stage)
  if (filter.status) add((n) => `status = $${n}`, filter.status)
  if (filter.since) add((n) => `created_at >= $${n}`, filter.since)
  if (filter.until) add((n) => `created_at < $${n}`, filter.until)
  if (filter.before) add((n) => `id < $${n}::bigint`, filter.before)
  return { sql: conditions.length ? `WHERE ${conditions.join(' AND ')}` : '', values }
}

export interface FailureRow {
  id: string
  channel: string
  stage: string
  status: string
  attempts: number
  source: string | null
  deliveryKey: string | null
  messageId: string | null
  error: string
  createdAt: Date
  updatedAt: Date
}

/**
 * The columns a page shows (the error cut for the table), for {@link toFailureRow}. `id` comes out
 * as text: an ORDER BY must name `channel_failures.id`, or it sorts the text ('995' after '1004').
 */
export const FAILURE_COLUMNS = `id::text, channel, stage, status, attempts, source, delivery_key,
  message_id::text, left(error, 300) AS error, created_at, updated_at`

export function toFailureRow(r: Record<string, unknown>): FailureRow {
  return {
    id: String(r.id),
    channel: String(r.channel),
    stage: String(r.stage),
    status: String(r.status),
    attempts: Number(r.attempts),
    source: (r.source as string | null) ?? null,
    deliveryKey: (r.delivery_key as string | null) ?? null,
    messageId: (r.message_id as string | null) ?? null,
    error: String(r.error),
    createdAt: new Date(r.created_at as string),
    updatedAt: new Date(r.updated_at as string),
  }
}

export async function listFailurePage(
  db: Queryable,
  filter: FailureFilter,
): Promise<{ rows: FailureRow[]; next: string | null }> {
  const { sql, values } = where(filter)
  const rows = await db.query<Record<string, unknown>>(
    `SELECT ${FAILURE_COLUMNS} FROM channel_failures ${sql}
      ORDER BY channel_failures.id DESC LIMIT ${PAGE_SIZE + 1}`,
    values,
  )
  const page = rows.slice(0, PAGE_SIZE).map(toFailureRow)
  const next = rows.length > PAGE_SIZE ? (page[page.length - 1]?.id ?? null) : null
  return { rows: page, next }
}

/** Dead rows a replay can take: inbound ones, and downstream ones that name their outbox row. */
const REPLAYABLE = `status = 'dead' AND (stage = 'inbound' OR (stage = 'downstream' AND outbox_id IS NOT NULL))`

/** How many rows a bulk replay of this filter would take (status is always dead). */
export async function countReplayable(db: Queryable, filter: FailureFilter): Promise<number> {
  const { sql, values } = where({ ...filter, status: undefined, before: undefined }, [REPLAYABLE])
  const rows = await db.query<{ n: string }>(
    `SELECT count(*)::text AS n FROM channel_failures ${sql}`,
    values,
  )
  return Number(rows[0]?.n ?? 0)
}

/** The next replayable row of the filter after `afterId` (a bulk run walks ids upwards). */
export async function nextReplayable(
  db: Queryable,
  filter: FailureFilter,
  afterId: string,
): Promise<string | null> {
  const { sql, values } = where({ ...filter, status: undefined, before: undefined }, [REPLAYABLE])
  values.push(afterId)
  const rows = await db.query<{ id: string }>(
    `SELECT id::text FROM channel_failures ${sql} AND id > $${values.length}::bigint
      ORDER BY channel_failures.id LIMIT 1`,
    values,
  )
  return rows[0]?.id ?? null
}
