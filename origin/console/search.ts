/**
 * The console's search by content: the messages whose text holds a phrase, anywhere and in any
 * case (`ILIKE`, the phrase's `%`, `_` and `\` taken literally), stored within a time range,
 * newest first. A trigram index of the text serves it (migrations 20261203003003/4). Bounded
 * twice: at most {@link SEARCH_LIMIT} rows, and a statement timeout of its own, shorter than the
 * origin's, so a phrase too common for its range ends with "narrow it" instead of holding a
 * connection. The text is the message's current one (its edits' earlier texts are not searched);
 * it is vendor text, which the page renders as text.
 * @module
 */
import type { Database } from '../db'
import { sqlState } from '../db/errors'
import { DatabaseUnavailableError } from '../errors'

export const SEARCH_LIMIT = 50
/** Below three characters a phrase has no trigram to look up: every row would be read. */
export const MIN_SEARCH_CHARS = 3
const MAX_SEARCH_CHARS = 200
export const SEARCH_TIMEOUT_MS = 2_000
/** The range when none is given: the last week. */
const DEFAULT_RANGE_MS = 7 * 24 * 3_600_000
/** Of a long body, this much around the first match is shown. */
const SNIPPET_BEFORE = 80
const SNIPPET_CHARS = 400

export interface SearchQuery {
  text: string
  since: Date
  until: Date
}

export interface SearchHit {
  id: string
  channel: string
  messageKey: string | null
  sender: string
  /** The body, or the part of a long one around the first match (with … where it was cut). */
  snippet: string
  createdAt: Date
  deleted: boolean
}

export type SearchResult =
  | { ok: true; hits: SearchHit[]; more: boolean }
  | { ok: false; reason: 'too_short' | 'too_long' | 'timed_out' }

/** `?q=&since=&until=` (UTC, `YYYY-MM-DDTHH:MM` as a datetime-local field sends it). */
export function parseSearch(query: Record<string, string>, now = Date.now()): SearchQuery {
  const at = (s: string | undefined) => {
    if (!s) return null
    const d = new Date(s.length === 16 ? `${s}:00Z` : s)
    return Number.isNaN(d.getTime()) ? null : d
  }
  const until = at(query.until) ?? new Date(now + 60_000)
  const since = at(query.since) ?? new Date(until.getTime() - DEFAULT_RANGE_MS)
  return { text: (query.q ?? '').trim(), since, until }
}

/** The phrase as an ILIKE pattern that matches it literally, anywhere. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

export async function searchMessages(db: Database, query: SearchQuery): Promise<SearchResult> {
  if (query.text.length < MIN_SEARCH_CHARS) return { ok: false, reason: 'too_short' }
  if (query.text.length > MAX_SEARCH_CHARS) return { ok: false, reason: 'too_long' }
  let rows: Row[]
  try {
    rows = await db.transaction(async (tx) => {
      await tx.query(`SET LOCAL statement_timeout = ${SEARCH_TIMEOUT_MS}`)
      return tx.query<Row>(
        `SELECT id::text, channel, channel_message_id, sender_external_id, body, created_at,
                deleted_at IS NOT NULL AS deleted
           FROM messages
          WHERE body ILIKE $1 ESCAPE '\\' AND created_at >= $2 AND created_at < $3
          ORDER BY created_at DESC, id DESC
          LIMIT $4`,
        [containsPattern(query.text), query.since, query.until, SEARCH_LIMIT + 1],
      )
    })
  } catch (err) {
    // 57014: cancelled by our statement timeout.
    if (err instanceof DatabaseUnavailableError && sqlState(err.cause) === '57014') {
      return { ok: false, reason: 'timed_out' }
    }
    throw err
  }
  const hits = rows.slice(0, SEARCH_LIMIT).map((row) => ({
    id: row.id,
    channel: row.channel,
    messageKey: row.channel_message_id,
    sender: row.sender_external_id,
    snippet: snippetOf(row.body, query.text),
    createdAt: new Date(row.created_at),
    deleted: row.deleted,
  }))
  return { ok: true, hits, more: rows.length > SEARCH_LIMIT }
}

interface Row {
  id: string
  channel: string
  channel_message_id: string | null
  sender_external_id: string
  body: string
  created_at: string | Date
  deleted: boolean
}

/** The body, or {@link SNIPPET_CHARS} of it from a little before the first match. */
export function snippetOf(body: string, text: string): string {
  if (body.length <= SNIPPET_CHARS) return body
  const at = Math.max(0, body.toLowerCase().indexOf(text.toLowerCase()))
  // Never between the two halves of a surrogate pair (an emoji): step back onto its first half.
  const lowHalf = (i: number) => body.charCodeAt(i) >= 0xdc00 && body.charCodeAt(i) <= 0xdfff
  let start = Math.max(0, at - SNIPPET_BEFORE)
  if (lowHalf(start)) start -= 1
  let end = Math.min(body.length, start + SNIPPET_CHARS)
  if (end < body.length && lowHalf(end)) end -= 1
  return `${start > 0 ? '…' : ''}${body.slice(start, end)}${end < body.length ? '…' : ''}`
}
