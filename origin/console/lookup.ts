/**
 * Lookup: any vendor id (Slack event_id or ts, Twilio MessageSid, Telegram update or message id,
 * WhatsApp wamid, email Message-ID) or a whole delivery / message key, to the message rows it
 * names, each with its customer and conversation, its edits in order, attachments, outbox rows,
 * failures, the gateway's sampled decisions for its delivery, and its claim in Redis. Keys end
 * with ":{id}", so "ends with" is an index range on the reversed key (migrations
 * 20261202004001-3); `#123` is a message row id. A Message-ID is found as a header spells it
 * too (`<id@Host>`): keys hold it as the email parser made it (email/keys.ts).
 * @module
 */
import type { ClaimStore } from '../../claims'
import { boundedId, normalizeMessageId } from '../../email/keys'
import type { Queryable } from '../db'
import { FAILURE_COLUMNS, type FailureRow, toFailureRow } from './failures'

/** Rows one lookup shows at most (a Telegram message id may repeat across chats). */
const MAX_MESSAGES = 20
/** Edits shown per message at most, the newest (a Slack message can be edited without end). */
const MAX_EDITS = 100
const MAX_QUERY_CHARS = 512

export interface FoundMessage {
  id: string
  channel: string
  messageKey: string | null
  deliveryKey: string
  sender: string
  body: string
  subject: string | null
  payloadHash: string
  occurredAt: Date
  editedAt: Date | null
  editSeq: string | null
  deletedAt: Date | null
  createdAt: Date
  attachments: unknown[]
  customer: { id: string; tenant: string; externalId: string; displayName: string | null }
  conversation: { id: string; status: string; subject: string | null }
  outbox: Array<{ id: string; topic: string; createdAt: Date; processedAt: Date | null }>
  /** Its edits, oldest first (message_edits, migration 20261202008001); the newest MAX_EDITS. */
  edits: FoundEdit[]
  /** All its edits, shown or not. */
  editCount: number
}

/** One edit of a message, as it arrived. */
export interface FoundEdit {
  editedAt: Date
  editSeq: string | null
  body: string
  deliveryKey: string
  payloadHash: string
  /** False: it arrived after a newer edit, so the row never showed its text. */
  applied: boolean
  recordedAt: Date
}

export interface FoundDecision {
  deliveryKey: string
  channel: string
  decision: string
  decidedBy: string
  reason: string
  payloadMismatch: boolean
  ms: number
  decidedAt: Date
}

export type FoundClaim =
  | { deliveryKey: string; kind: 'none' }
  | { deliveryKey: string; kind: 'unavailable'; error: string }
  | { deliveryKey: string; kind: 'held'; state: string; hash: string | null; ttlMs: number }

export interface LookupResult {
  query: string
  messages: FoundMessage[]
  failures: FailureRow[]
  decisions: FoundDecision[]
  claims: FoundClaim[]
}

/** `LIKE` pattern: the reversed id, its metacharacters escaped, then anything. */
function endsWithPattern(id: string): string {
  const reversed = [...id].reverse().join('')
  return `${reversed.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/** Keyed column `col` is `q` or ends with ":q" (index: reverse(col) text_pattern_ops). */
const keyMatches = (col: string) =>
  `(reverse(${col}) LIKE $1 AND (${col} = $2 OR right(${col}, length($2) + 1) = ':' || $2))`

/**
 * What the keys hold for a query: a Message-ID as copied from a header (`<id@Host>`, or a bare
 * `id@Host`) becomes the email parser's form (no brackets, the domain lower-cased, a very long one
 * hashed); anything else is searched as it is. A whole key (it has `:`) is never rewritten.
 */
export async function searchTerm(query: string): Promise<string> {
  const bracketed = /^<[^<>\s]+>$/.test(query)
  const bare = !query.includes(':') && /^[^<>\s@]+@[^<>\s@]+$/.test(query)
  if (!bracketed && !bare) return query
  const id = normalizeMessageId(query)
  return id === null ? query : boundedId(id)
}

export async function lookup(
  db: Queryable,
  claims: ClaimStore | null,
  raw: string,
): Promise<LookupResult> {
  const query = raw.trim().slice(0, MAX_QUERY_CHARS)
  const empty: LookupResult = { query, messages: [], failures: [], decisions: [], claims: [] }
  if (!query) return empty
  const rowId = /^#(\d{1,18})$/.exec(query)?.[1] ?? null
  const term = await searchTerm(query)
  const pattern = endsWithPattern(term)
  const messages = await findMessages(db, pattern, term, rowId)
  const deliveryKeys = [...new Set(messages.map((m) => m.deliveryKey))]
  const [failures, decisions] = await Promise.all([
    findFailures(
      db,
      pattern,
      term,
      messages.map((m) => m.id),
    ),
    findDecisions(db, pattern, term, deliveryKeys),
  ])
  const keys = new Set([
    ...deliveryKeys,
    ...failures.flatMap((f) => (f.deliveryKey ? [f.deliveryKey] : [])),
    ...decisions.map((d) => d.deliveryKey),
  ])
  return {
    query,
    messages,
    failures,
    decisions,
    claims: await Promise.all([...keys].slice(0, MAX_MESSAGES).map((k) => readClaim(claims, k))),
  }
}

async function findMessages(
  db: Queryable,
  pattern: string,
  query: string,
  rowId: string | null,
): Promise<FoundMessage[]> {
  const rows = await db.query<Record<string, unknown>>(
    `SELECT m.id::text, m.channel, m.channel_message_id, m.first_delivery_key, m.sender_external_id,
            m.body, m.subject, m.payload_hash, m.occurred_at, m.edited_at, m.edit_seq::text,
            m.deleted_at, m.created_at, m.attachments,
            cu.id::text AS customer_id, cu.tenant, cu.external_id, cu.display_name,
            cv.id::text AS conversation_id, cv.status AS conversation_status,
            cv.subject AS conversation_subject,
            coalesce((SELECT jsonb_agg(jsonb_build_object('id', o.id::text, 'topic', o.topic,
                       'createdAt', o.created_at, 'processedAt', o.processed_at) ORDER BY o.id)
                        FROM outbox o WHERE o.message_id = m.id), '[]') AS outbox,
            ${EDITS_OF_M} AS edits,
            (SELECT count(*) FROM message_edits e WHERE e.message_id = m.id)::int AS edit_count
       FROM messages m
       JOIN conversations cv ON cv.id = m.conversation_id
       JOIN customers cu ON cu.id = cv.customer_id
      WHERE ${keyMatches('m.channel_message_id')} OR ${keyMatches('m.first_delivery_key')}
         OR m.id = $3::bigint
      ORDER BY m.id DESC LIMIT ${MAX_MESSAGES}`,
    [pattern, query, rowId],
  )
  return rows.map(toMessage)
}

/**
 * The newest MAX_EDITS edits of `m`, oldest first, in the order the row applies them (edit_seq
 * NULLS FIRST: one with a sequence wins over one without); index message_edits_edit_key.
 */
const EDITS_OF_M = `coalesce((SELECT jsonb_agg(jsonb_build_object('editedAt', e.edited_at,
    'editSeq', e.edit_seq::text, 'body', e.body, 'deliveryKey', e.delivery_key,
    'payloadHash', e.payload_hash, 'applied', e.applied, 'recordedAt', e.recorded_at)
    ORDER BY e.edited_at, e.edit_seq NULLS FIRST)
    FROM (SELECT * FROM message_edits WHERE message_id = m.id
           ORDER BY edited_at DESC, edit_seq DESC NULLS LAST LIMIT ${MAX_EDITS}) e), '[]')`

const dateOrNull = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string))

function toMessage(r: Record<string, unknown>): FoundMessage {
  const outbox = (r.outbox as Array<Record<string, string | null>>).map((o) => ({
    id: String(o.id),
    topic: String(o.topic),
    createdAt: new Date(String(o.createdAt)),
    processedAt: dateOrNull(o.processedAt),
  }))
  const edits = (r.edits as Array<Record<string, unknown>>).map((e) => ({
    editedAt: new Date(String(e.editedAt)),
    editSeq: (e.editSeq as string | null) ?? null,
    body: String(e.body),
    deliveryKey: String(e.deliveryKey),
    payloadHash: String(e.payloadHash),
    applied: e.applied === true,
    recordedAt: new Date(String(e.recordedAt)),
  }))
  return {
    id: String(r.id),
    channel: String(r.channel),
    messageKey: (r.channel_message_id as string | null) ?? null,
    deliveryKey: String(r.first_delivery_key),
    sender: String(r.sender_external_id),
    body: String(r.body ?? ''),
    subject: (r.subject as string | null) ?? null,
    payloadHash: String(r.payload_hash),
    occurredAt: new Date(r.occurred_at as string),
    editedAt: dateOrNull(r.edited_at),
    editSeq: (r.edit_seq as string | null) ?? null,
    deletedAt: dateOrNull(r.deleted_at),
    createdAt: new Date(r.created_at as string),
    attachments: Array.isArray(r.attachments) ? r.attachments : [],
    customer: {
      id: String(r.customer_id),
      tenant: String(r.tenant),
      externalId: String(r.external_id),
      displayName: (r.display_name as string | null) ?? null,
    },
    conversation: {
      id: String(r.conversation_id),
      status: String(r.conversation_status),
      subject: (r.conversation_subject as string | null) ?? null,
    },
    outbox,
    edits,
    editCount: Number(r.edit_count),
  }
}

async function findFailures(
  db: Queryable,
  pattern: string,
  query: string,
  messageIds: string[],
): Promise<FailureRow[]> {
  const rows = await db.query<Record<string, unknown>>(
    `SELECT ${FAILURE_COLUMNS} FROM channel_failures
      WHERE ${keyMatches('delivery_key')} OR message_id = ANY($3::bigint[])
      ORDER BY channel_failures.id DESC LIMIT 50`,
    [pattern, query, messageIds],
  )
  return rows.map(toFailureRow)
}

async function findDecisions(
  db: Queryable,
  pattern: string,
  query: string,
  deliveryKeys: string[],
): Promise<FoundDecision[]> {
  const rows = await db.query<Record<string, unknown>>(
    `SELECT delivery_key, channel, decision, decided_by, reason, payload_mismatch, ms, decided_at
       FROM gateway_decision_keys
      WHERE ${keyMatches('delivery_key')} OR delivery_key = ANY($3::text[])
      ORDER BY decided_at, id LIMIT 100`,
    [pattern, query, deliveryKeys],
  )
  return rows.map((r) => ({
    deliveryKey: String(r.delivery_key),
    channel: String(r.channel),
    decision: String(r.decision),
    decidedBy: String(r.decided_by),
    reason: String(r.reason),
    payloadMismatch: r.payload_mismatch === true,
    ms: Number(r.ms),
    decidedAt: new Date(r.decided_at as string),
  }))
}

/** The claim of a delivery key, read through the claim store (the Worker's keys and prefix). */
async function readClaim(claims: ClaimStore | null, deliveryKey: string): Promise<FoundClaim> {
  if (!claims) return { deliveryKey, kind: 'unavailable', error: 'Redis is not configured' }
  try {
    const found = await claims.inspect(deliveryKey)
    if (!found) return { deliveryKey, kind: 'none' }
    const state = found.status === 'inflight' ? 'inflight' : found.state
    return { deliveryKey, kind: 'held', state, hash: found.hash, ttlMs: found.ttlMs }
  } catch {
    return { deliveryKey, kind: 'unavailable', error: 'Redis did not answer' }
  }
}
