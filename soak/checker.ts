/**
 * The checker: after the faults have healed, the deliveries have ended, the spool queue has
 * settled and dead events have been replayed, each message of the run against its rows in
 * Postgres (found by the marker its text starts with):
 *
 * - a validly signed message is exactly one `messages` row with one `outbox` row; no row (or no
 *   outbox row) is **lost**, whatever it was answered: every vendor delivery run has ended by
 *   now, so a message that got a 2xx and has no row is a broken promise, and one that never got
 *   a 2xx is gone too (its vendor gave up: Twilio after one 5xx);
 * - an edited message's row holds its last edit's text, a deleted one is marked deleted: if not,
 *   the edit or delete is **lost**;
 * - a second row or a second outbox row is **doubled**;
 * - a forged message (wrong signature) is answered 4xx and writes nothing, else it **leaked**.
 *
 * Counted apart, for information, as **overtaken**: a delete that reached the origin before its
 * message did (the message waiting in the spool queue, which does not keep order). It is answered
 * "ignored" there and remembered as a tombstone, and the message must land deleted all the same:
 * the ingest and the delete hold the message key's lock (migration 20261202000001), so no race
 * leaves it undeleted, and one left undeleted is a **lost** delete like any other.
 *
 * Twilio messages answered 5xx and never 2xx are counted apart ("the vendor will not retry"):
 * with the spool queue up there must be none. A copy answered 503 while another copy of the same
 * message holds its claim (and gets the 200) is not one of them: that message was taken.
 * @module
 */
import type pg from 'pg'
import { is2xx } from '../test/faults/support/vendors'
import type { SoakAttempt, SoakMessage } from './messages'

export interface Row {
  marker: string
  body: string
  deleted: boolean
  outbox: number
}

export interface Verdict {
  message: SoakMessage
  rows: number
  lost: boolean
  /** Its delete reached the origin before its message (see the module note). */
  overtaken: boolean
  doubled: number
  leaked: number
  /** Why it is lost, doubled or leaked. */
  problem?: string
}

export interface CheckResult {
  verdicts: Verdict[]
  lost: number
  /** Deletes that overtook their message and were ignored (see the module note). */
  overtaken: number
  doubled: number
  leaked: number
  /** Twilio messages (validly signed) answered 5xx and never 2xx. */
  twilio5xx: number
}

/** The rows of one run (by marker pattern), with their outbox counts. */
export async function rowsOf(sql: pg.Pool, markerPattern: string): Promise<Row[]> {
  const { rows } = await sql.query<Omit<Row, 'marker'>>(
    `SELECT m.body, m.deleted_at IS NOT NULL AS deleted,
            (SELECT count(*) FROM outbox o WHERE o.message_id = m.id)::int AS outbox
       FROM messages m WHERE m.body LIKE $1`,
    [markerPattern],
  )
  return rows.map((row) => ({ ...row, marker: row.body.split(' ', 1)[0] ?? '' }))
}

export async function check(
  sql: pg.Pool,
  markerPattern: string,
  messages: readonly SoakMessage[],
  ignoredDeletes: ReadonlySet<string> = new Set(),
): Promise<CheckResult> {
  return judge(messages, await rowsOf(sql, markerPattern), ignoredDeletes)
}

/**
 * The verdicts, from the messages sent and the rows found (pure: the unit tests call it).
 * `ignoredDeletes`: markers of messages whose delete the origin answered "ignored".
 */
export function judge(
  messages: readonly SoakMessage[],
  rows: readonly Row[],
  ignoredDeletes: ReadonlySet<string> = new Set(),
): CheckResult {
  const byMarker = new Map<string, Row[]>()
  for (const row of rows) byMarker.set(row.marker, [...(byMarker.get(row.marker) ?? []), row])
  const verdicts = messages.map((message) =>
    verdictOf(message, byMarker.get(message.marker) ?? [], ignoredDeletes.has(message.marker)),
  )
  return {
    verdicts,
    lost: verdicts.filter((v) => v.lost).length,
    overtaken: verdicts.filter((v) => v.overtaken).length,
    doubled: verdicts.reduce((sum, v) => sum + v.doubled, 0),
    leaked: verdicts.reduce((sum, v) => sum + v.leaked, 0),
    twilio5xx: messages.filter(refusedTwilio).length,
  }
}

function verdictOf(message: SoakMessage, rows: readonly Row[], deleteIgnored: boolean): Verdict {
  const verdict: Verdict = {
    message,
    rows: rows.length,
    lost: false,
    overtaken: false,
    doubled: 0,
    leaked: 0,
  }
  const answers = message.attempts.map((a) => String(a.outcome)).join(',') || 'none'
  const what = `${message.marker} (${message.channel}, answers ${answers})`
  if (message.forged) {
    verdict.leaked = rows.length + message.attempts.filter(isAccepted).length
    if (verdict.leaked > 0) verdict.problem = `leaked ${what}: ${rows.length} rows`
    return verdict
  }
  const outbox = rows.reduce((sum, row) => sum + row.outbox, 0)
  const problems: string[] = []
  if (rows.length === 0 || outbox === 0) {
    verdict.lost = true
    problems.push(`lost ${what}: ${rows.length} rows, ${outbox} outbox rows`)
  } else if (message.edits > 0 && !rows.some((row) => row.body === message.text())) {
    verdict.lost = true
    problems.push(`lost edit ${message.edits} of ${what}: the row says "${rows[0]?.body}"`)
  } else if (message.deleted && !rows.some((row) => row.deleted)) {
    verdict.lost = true
    const first = deleteIgnored ? ' (the delete came first; its tombstone was not applied)' : ''
    problems.push(`lost delete of ${what}: the row is not marked deleted${first}`)
  }
  verdict.overtaken = message.deleted && deleteIgnored
  verdict.doubled = Math.max(0, rows.length - 1) + Math.max(0, outbox - Math.max(rows.length, 1))
  if (verdict.doubled > 0) problems.push(`doubled ${what}: ${rows.length} rows, ${outbox} outbox`)
  if (problems.length > 0) verdict.problem = problems.join('; ')
  return verdict
}

/** A Twilio message answered 5xx and never 2xx: Twilio will not send it again. */
export const refusedTwilio = (m: SoakMessage): boolean =>
  m.vendor === 'twilio' && !m.forged && m.attempts.some(is5xx) && !m.attempts.some(isAccepted)

export const isAccepted = (a: SoakAttempt): boolean => a.outcome === 'stored' || is2xx(a.outcome)
export const is4xx = (a: SoakAttempt): boolean =>
  typeof a.outcome === 'number' && a.outcome >= 400 && a.outcome < 500
export const is5xx = (a: SoakAttempt): boolean => typeof a.outcome === 'number' && a.outcome >= 500
