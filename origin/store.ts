/**
 * The SQL of ingestion, one function per statement. Column and index names are the contract set by
 * migrations/; each `ON CONFLICT` names the partial unique index it relies on, with its predicate
 * (Postgres only infers a partial index as the arbiter when the predicate is repeated).
 *
 * Ids are `bigint` columns, which the driver returns as strings; they stay strings end to end.
 * @module
 */
import type { InboundEvent } from '../contract/event'
import type { Queryable } from './db'

export interface StoredMessage {
  messageId: string
  conversationId: string
  customerId: string
  payloadHash: string
  edited: boolean
}

interface StoredMessageRow {
  id: string
  conversation_id: string
  customer_id: string
  payload_hash: string
  edited: boolean
}

function toStoredMessage(row: StoredMessageRow | undefined): StoredMessage | null {
  if (!row) return null
  return {
    messageId: row.id,
    conversationId: row.conversation_id,
    customerId: row.customer_id,
    payloadHash: row.payload_hash,
    edited: row.edited,
  }
}

/** What `ingest_message()` found or did (the function as it runs: migrations/schema.sql). */
export type NewMessageOutcome =
  /** The message, its outbox row and, as needed, its customer and conversation were written. */
  | 'created'
  /** A row holds this key (a replay, or the winner of a race): nothing was written. */
  | 'known'

export interface NewMessageResult {
  outcome: NewMessageOutcome
  /** The row created, or the one found. */
  stored: StoredMessage
}

interface IngestMessageRow extends StoredMessageRow {
  outcome: NewMessageOutcome
}

/**
 * The one statement of a new message: `ingest_message()` (a plpgsql function, see its migration)
 * looks up the key, then upserts the customer, finds
 * or creates the conversation, and inserts the message with its `message.created` outbox row; a
 * lost race on the message key (23505) rolls back what it wrote and answers with the winner.
 * One statement is its own transaction, and one database round trip.
 *
 * `editedAt` is set when an edit of a message never seen creates it (with the edit's sequence,
 * so an older same-second edit loses).
 */
export async function ingestNewMessage(
  db: Queryable,
  event: InboundEvent,
  editedAt: string | null,
): Promise<NewMessageResult> {
  const rows = await db.query<IngestMessageRow>(
    `SELECT outcome, message_id AS id, conversation_id, customer_id, payload_hash, edited
       FROM ingest_message($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::timestamptz,
                           $11::timestamptz, $12::bigint, $13::jsonb, $14::text[])`,
    [
      event.channel,
      event.tenant,
      event.messageKey,
      event.sender.externalId,
      event.sender.displayName ?? null,
      event.body,
      event.subject ?? null,
      event.payloadHash,
      event.deliveryKey,
      event.occurredAt,
      editedAt,
      editedAt === null ? null : (event.editSeq ?? null),
      JSON.stringify(event.attachments ?? []),
      emailReferences(event),
    ],
    INGEST_STATEMENT,
  )
  const row = rows[0]
  const stored = toStoredMessage(row)
  if (!row || !stored) throw new Error('ingest_message() returned no row')
  return { outcome: row.outcome, stored }
}

/**
 * The name the ingest statement is prepared under on each connection (parsed and planned once per
 * connection, then only bound and executed). Neon's pooler (PgBouncer 1.22+) tracks
 * protocol-level prepared statements, so this holds on the pooled endpoint too.
 */
const INGEST_STATEMENT = { name: 'ingest_message_v1' }

/** An email's thread references (only email threads by them). */
function emailReferences(event: InboundEvent): string[] | null {
  return event.channel === 'email' ? (event.references ?? null) : null
}

/**
 * Applies an edit if it is newer than the last one applied: an edit that arrives after a newer
 * one (vendors do not order deliveries) or a replay changes nothing and returns null. Two edits
 * with the same time are ordered by `editSeq` (the larger wins; a row edited before sequences
 * existed has none, and an edit that has one wins over it).
 * `payload_hash` keeps the original message's hash, so a replay of the original is no mismatch.
 * An edit's attachments (the whole new message's: a new caption, a replaced photo) replace the
 * row's; an edit without any leaves them.
 *
 * Every edit of a known message is also recorded in `message_edits`, in the same statement, the
 * late one too (not applied); a replay adds nothing. `apply_message_edit()`, shared with batches:
 * migrations/schema.sql.
 */
export async function applyEdit(db: Queryable, event: InboundEvent): Promise<StoredMessage | null> {
  const media = event.attachments?.length ? JSON.stringify(event.attachments) : null
  const rows = await db.query<StoredMessageRow>(
    `SELECT message_id AS id, conversation_id, customer_id, payload_hash, edited
       FROM apply_message_edit($1, $2, $3, $4, $5::timestamptz, $6::bigint, $7::jsonb, $8, $9)`,
    [
      event.channel,
      event.messageKey,
      event.tenant,
      event.body,
      event.occurredAt,
      event.editSeq ?? null,
      media,
      event.deliveryKey,
      event.payloadHash,
    ],
  )
  return toStoredMessage(rows[0])
}

/**
 * Holds the message key's lock until the transaction ends; ingest_message() takes the same lock
 * before it inserts (migration 20261202000001_message_key_lock.sql says why).
 */
export async function lockMessageKey(tx: Queryable, event: InboundEvent): Promise<void> {
  await tx.query('SELECT lock_message_key($1, $2)', [event.channel, event.messageKey])
}

/** What `apply_message_deletion()` found or did (migrations/schema.sql). */
export type DeletionOutcome = 'updated' | 'known' | 'ignored'

/**
 * A delete or an undelete in one statement, `apply_message_deletion()`: the tenant's row (its
 * customer's tenant is the event's: a key with a tenant's prefix may still be another tenant's,
 * Telegram's bot and its business accounts, `{bot}:` and `{bot}:biz:{id}:`) moved to
 * the later of its latest delete and latest undelete (`updated` when that changed what it shows,
 * `known` for a replay or one overtaken by a later change); no row yet: remembered in its
 * tombstone (`ignored`), and the message, when it lands, is stored in that state.
 */
export async function applyDeletion(
  db: Queryable,
  event: InboundEvent,
): Promise<{ outcome: DeletionOutcome; stored: StoredMessage | null }> {
  const rows = await db.query<StoredMessageRow & { outcome: DeletionOutcome }>(
    `SELECT outcome, message_id AS id, conversation_id, customer_id, payload_hash, edited
       FROM apply_message_deletion($1, $2, $3, $4::timestamptz, $5, $6)`,
    [
      event.channel,
      event.messageKey,
      event.tenant,
      event.occurredAt,
      event.kind === 'undelete',
      event.deliveryKey,
    ],
  )
  const row = rows[0]
  if (!row) throw new Error('apply_message_deletion() returned no row')
  return { outcome: row.outcome, stored: row.id === null ? null : toStoredMessage(row) }
}

/** What `ingest_events()` answers for one event of a batch (migrations/schema.sql). */
export type BatchEventOutcome = NewMessageOutcome | 'updated' | 'ignored' | 'failed'

export interface BatchEventRow {
  outcome: BatchEventOutcome
  /** Null for `ignored` and `failed`. */
  stored: StoredMessage | null
  /** For `failed`: the SQLSTATE that failed this event alone (it is then ingested on its own). */
  sqlState: string | null
}

interface BatchRow extends StoredMessageRow {
  ord: number
  outcome: BatchEventOutcome
  sqlstate: string | null
}

/**
 * A whole batch in one statement, one transaction: `ingest_events()` takes every key lock the batch
 * needs first (in one order), then ingests each event as the single path would, in the batch's
 * order. One row per event, in the same order.
 */
export async function ingestEventsStatement(
  db: Queryable,
  events: readonly InboundEvent[],
): Promise<BatchEventRow[]> {
  const flat = events.map(flattenForBatch)
  const rows = await db.query<BatchRow>(
    `SELECT ord, outcome, message_id AS id, conversation_id, customer_id, payload_hash, edited,
            sqlstate
       FROM ingest_events($1::jsonb)`,
    [JSON.stringify(flat)],
    INGEST_BATCH_STATEMENT,
  )
  if (rows.length !== events.length) throw new Error('ingest_events() answered another count')
  return rows
    .sort((a, b) => a.ord - b.ord)
    .map((row) => ({
      outcome: row.outcome,
      stored: row.id === null ? null : toStoredMessage(row),
      sqlState: row.sqlstate,
    }))
}

const INGEST_BATCH_STATEMENT = { name: 'ingest_events_v1' }

/** One event as ingest_events() reads it: the arguments ingestNewMessage() passes, by name. */
function flattenForBatch(event: InboundEvent) {
  return {
    kind: event.kind,
    channel: event.channel,
    tenant: event.tenant,
    messageKey: event.messageKey,
    sender: event.sender.externalId,
    displayName: event.sender.displayName ?? null,
    body: event.body,
    subject: event.subject ?? null,
    payloadHash: event.payloadHash,
    deliveryKey: event.deliveryKey,
    occurredAt: event.occurredAt,
    editSeq: event.editSeq ?? null,
    attachments: event.attachments ?? null,
    references: emailReferences(event),
  }
}
