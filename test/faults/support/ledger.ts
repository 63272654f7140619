/**
 * The invariant, checked against Postgres after a case has healed and the spool queue has settled:
 *
 * - every logical message a vendor sent (validly signed) is exactly one `messages` row with
 *   exactly one `outbox` row, under the key it should have;
 * - a message with no row is **lost**, whatever the gateway answered: a 2xx with no row is a
 *   broken promise, and a message whose every delivery got a non-2xx from a vendor that then
 *   gave up (Twilio after one 5xx, Slack after its last retry) is just as gone. A row without
 *   its outbox row also counts as lost (the hand-off downstream is missing);
 * - a second row, or a second outbox row, is **doubled**;
 * - a forged delivery (wrong signature) must be answered 4xx and write nothing;
 * - a message the spool gave up on (dead-lettered) and an operator replayed from
 *   `channel_failures` counts as landed only through that replay: it must have had no row just
 *   before it.
 * @module
 */

import type pg from 'pg'
import { type Column, markdownTable } from '../../../local/markdown-table'
import type { SpoolTally } from './fault-stack'
import { is2xx, type Message } from './vendors'

/** What the spool and the operator did with a case's messages, for the ledger. */
export interface SpoolRecord {
  /** The Worker's log lines about `message` on the spool queue. */
  tally(message: Message): SpoolTally
  /** Messages replayed from channel_failures (by marker), with their rows just before. */
  replays: ReadonlyMap<string, { rowsBefore: number }>
}

export interface CaseResult {
  name: string
  /** Logical messages the vendors sent (forged ones not counted). */
  messages: number
  /** HTTP deliveries (attempts) made, forged ones included. */
  deliveries: number
  /** Deliveries answered 2xx. */
  accepted: number
  /** Deliveries answered 4xx. */
  rejected: number
  /** Deliveries started while the fault was in effect. */
  inFault: number
  /** Message rows found for this case's messages. */
  rows: number
  lost: number
  doubled: number
  /** Messages never answered 2xx (the vendor gave up): lost unless a row exists anyway. */
  gaveUp: number
  /** Messages put on the spool queue at least once (answered 200 with the origin failing). */
  queued: number
  /** Messages the spool dead-lettered (recorded in channel_failures, not in messages). */
  dead: number
  /** Dead messages an operator replayed (`npm run failures -- replay`). */
  replayed: number
  /** Forged deliveries answered 2xx, and rows they wrote. */
  forgedLeaks: number
  seconds: number
  /** What went wrong, message by message, for the failure report. */
  problems: string[]
}

interface Row {
  id: string
  channel: string
  channel_message_id: string | null
  body: string
  outbox: number
}

/** The rows whose text starts with one of this case's markers. */
export async function rowsFor(sql: pg.Pool, markerPattern: string): Promise<Row[]> {
  const result = await sql.query<Row>(
    `SELECT m.id, m.channel, m.channel_message_id, m.body,
            (SELECT count(*) FROM outbox o WHERE o.message_id = m.id)::int AS outbox
       FROM messages m WHERE m.body LIKE $1`,
    [markerPattern],
  )
  return result.rows
}

/** The marker a row's text starts with. */
function markerOf(body: string): string {
  return body.split(' ', 1)[0] ?? ''
}

export async function checkCase(
  sql: pg.Pool,
  name: string,
  markerPattern: string,
  messages: readonly Message[],
  spool: SpoolRecord,
  seconds: number,
): Promise<CaseResult> {
  const byMarker = new Map<string, Row[]>()
  for (const row of await rowsFor(sql, markerPattern)) {
    const marker = markerOf(row.body)
    byMarker.set(marker, [...(byMarker.get(marker) ?? []), row])
  }
  const attempts = messages.flatMap((m) => m.attempts)
  const result: CaseResult = {
    name,
    messages: messages.filter((m) => !m.forged).length,
    deliveries: attempts.length,
    accepted: attempts.filter((a) => is2xx(a.outcome)).length,
    rejected: attempts.filter((a) => is4xx(a.outcome)).length,
    inFault: attempts.filter((a) => a.inFault).length,
    rows: 0,
    lost: 0,
    doubled: 0,
    gaveUp: 0,
    queued: 0,
    dead: 0,
    replayed: 0,
    forgedLeaks: 0,
    seconds,
    problems: [],
  }
  for (const message of messages) {
    const rows = byMarker.get(message.marker) ?? []
    const outbox = rows.reduce((sum, row) => sum + row.outbox, 0)
    const answered = message.attempts.map((a) => `${a.outcome}@${a.at}ms`).join(',')
    const what = `${message.marker} (${message.channel}, answers ${answered || 'none'})`
    if (message.forged) {
      const leaked = rows.length + message.attempts.filter((a) => is2xx(a.outcome)).length
      result.forgedLeaks += leaked
      if (leaked > 0) result.problems.push(`forged ${what}: ${rows.length} rows`)
      continue
    }
    result.rows += rows.length
    if (!message.attempts.some((a) => is2xx(a.outcome))) result.gaveUp++
    const tally = spool.tally(message)
    if (tally.queued > 0) result.queued++
    if (tally.dead > 0) result.dead++
    const replay = spool.replays.get(message.marker)
    if (replay) {
      result.replayed++
      if (replay.rowsBefore > 0) {
        result.problems.push(`landed before its replay ${what}: ${replay.rowsBefore} rows`)
      }
    }
    if (rows.length === 0 || outbox === 0) {
      result.lost++
      result.problems.push(`lost ${what}: ${rows.length} rows, ${outbox} outbox rows`)
    }
    const extra = Math.max(0, rows.length - 1) + Math.max(0, outbox - Math.max(rows.length, 1))
    if (extra > 0) {
      result.doubled += extra
      result.problems.push(`doubled ${what}: ${rows.length} rows, ${outbox} outbox rows`)
    }
    for (const row of rows) {
      if (row.channel !== message.channel || row.channel_message_id !== message.messageKey) {
        result.problems.push(
          `misfiled ${what}: row ${row.id} is ${row.channel} ${row.channel_message_id}, expected ${message.channel} ${message.messageKey}`,
        )
      }
    }
  }
  return result
}

function is4xx(outcome: Message['attempts'][number]['outcome']): boolean {
  return typeof outcome === 'number' && outcome >= 400 && outcome < 500
}

const COLUMNS: readonly Column<CaseResult>[] = [
  ['case', (r) => r.name],
  ['messages', (r) => r.messages],
  ['deliveries', (r) => r.deliveries],
  ['in fault', (r) => r.inFault],
  ['accepted', (r) => r.accepted],
  ['rejected', (r) => r.rejected],
  ['rows', (r) => r.rows],
  ['gave up', (r) => r.gaveUp],
  ['queued', (r) => r.queued],
  ['dead', (r) => r.dead],
  ['replayed', (r) => r.replayed],
  ['lost', (r) => r.lost],
  ['doubled', (r) => r.doubled],
  ['forged leaks', (r) => r.forgedLeaks],
  ['s', (r) => r.seconds.toFixed(1)],
]

/** The fault matrix's table (local/markdown-table.ts). */
export function formatTable(results: readonly CaseResult[]): string {
  return markdownTable(COLUMNS, results)
}
