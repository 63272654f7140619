/**
 * The SQL of ingestion, one function per statement. Column and index names are the contract set by
 * migrations/; each `ON CONFLICT` names the partial unique index it relies on, with its predicate
 * (Postgres only infers a partial index as the arbiter when the predicate is repeated).
 *
 * Ids are `bigint` columns, which the driver returns as strings; they stay strings end to end.
 * @module
 */
import { emailSenderKeyPart, otherEmailKeyForm } from '../contract/email-keys'
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

const STORED_MESSAGE_COLUMNS = `m.id, m.conversation_id, c.customer_id, m.payload_hash,
  m.edited_at IS NOT NULL AS edited`

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

/** The first stored message matching `condition` (trusted SQL over `m` and `c`). */
async function selectStoredMessage(
  db: Queryable,
  condition: string,
  values: unknown[],
): Promise<StoredMessage | null> {
  const rows = await db.query<StoredMessageRow>(
    `SELECT ${STORED_MESSAGE_COLUMNS}
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
      WHERE ${condition}`,
    values,
  )
  return toStoredMessage(rows[0])
}

/** The row that holds this logical message, if any (the winner of any race, once committed). */
export function findMessage(db: Queryable, event: InboundEvent): Promise<StoredMessage | null> {
  return selectStoredMessage(db, 'm.channel = $1 AND m.channel_message_id = $2', [
    event.channel,
    event.messageKey,
  ])
}

/**
 * Finds or creates the customer. Two first messages from a new sender at once both reach the
 * `customers_identity_key` conflict; the second waits for the first to commit and gets its row.
 * The display name is only written when it brings something new, so a replay writes no tuple.
 */
export async function upsertCustomer(tx: Queryable, event: InboundEvent): Promise<string> {
  const identity = [event.channel, event.tenant, event.sender.externalId]
  const upserted = await tx.query<{ id: string }>(
    `INSERT INTO customers (channel, tenant, external_id, display_name)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT ON CONSTRAINT customers_identity_key DO UPDATE
       SET display_name = EXCLUDED.display_name
       WHERE EXCLUDED.display_name IS NOT NULL
         AND customers.display_name IS DISTINCT FROM EXCLUDED.display_name
     RETURNING id`,
    [...identity, event.sender.displayName ?? null],
  )
  if (upserted[0]) return upserted[0].id
  // The row exists and needed no update; ON CONFLICT has locked it, so it is there to read.
  const existing = await tx.query<{ id: string }>(
    'SELECT id FROM customers WHERE channel = $1 AND tenant = $2 AND external_id = $3',
    identity,
  )
  if (!existing[0]) throw new Error('customer vanished after ON CONFLICT')
  return existing[0].id
}

/**
 * `findOrCreateByChannel` (ADR-013) for non-email channels: the customer's one pending
 * conversation. The insert cannot fail on a concurrent creator: `DO NOTHING` on the
 * `conversations_one_pending_key` index, then read the winner (23505 semantics without aborting
 * the transaction).
 */
export async function findOrCreatePendingConversation(
  tx: Queryable,
  customerId: string,
  event: InboundEvent,
): Promise<string> {
  const find = () =>
    tx.query<{ id: string }>(
      `SELECT id FROM conversations
        WHERE customer_id = $1 AND channel = $2 AND status = 'pending'`,
      [customerId, event.channel],
    )
  const found = await find()
  if (found[0]) return found[0].id
  const created = await tx.query<{ id: string }>(
    `INSERT INTO conversations (customer_id, channel)
     VALUES ($1, $2)
     ON CONFLICT (customer_id, channel) WHERE status = 'pending' AND channel <> 'email' DO NOTHING
     RETURNING id`,
    [customerId, event.channel],
  )
  if (created[0]) return created[0].id
  const winner = await find()
  if (!winner[0]) throw new Error('pending conversation vanished after ON CONFLICT')
  return winner[0].id
}

/**
 * Email conversations follow the thread, not the pending index: a reply whose In-Reply-To or
 * References names a message we hold *in a conversation of this same customer* (same From
 * address, same mailbox) joins that conversation (the nearest reference wins); anything else,
 * a stranger naming someone else's Message-ID included, opens a new conversation with the
 * subject. The parser already scopes references by the replying sender; the customer check keeps
 * the rule here too, whatever an event names, and covers rows stored under the old key.
 */
export async function findOrCreateEmailConversation(
  tx: Queryable,
  customerId: string,
  event: InboundEvent,
): Promise<string> {
  const references = await withOtherEmailKeyForms(event)
  if (references.length > 0) {
    const thread = await tx.query<{ conversation_id: string }>(
      `SELECT m.conversation_id FROM messages m JOIN conversations c ON c.id = m.conversation_id
        WHERE m.channel = 'email' AND m.channel_message_id = ANY($1::text[])
          AND c.customer_id = $2
        ORDER BY array_position($1::text[], m.channel_message_id), m.id
        LIMIT 1`,
      [references, customerId],
    )
    if (thread[0]) return thread[0].conversation_id
  }
  const created = await tx.query<{ id: string }>(
    `INSERT INTO conversations (customer_id, channel, subject) VALUES ($1, 'email', $2)
     RETURNING id`,
    [customerId, event.subject ?? null],
  )
  if (!created[0]) throw new Error('INSERT ... RETURNING returned no row')
  return created[0].id
}

/**
 * The event's references, each followed by its form on the other side of the upgrade that added
 * the sender to email keys ({@link otherEmailKeyForm}), nearest first.
 */
async function withOtherEmailKeyForms(event: InboundEvent): Promise<string[]> {
  const references = event.references ?? []
  if (references.length === 0) return []
  const senderPart = await emailSenderKeyPart(event.sender.externalId)
  return references.flatMap((key) => {
    const other = otherEmailKeyForm(key, event.tenant, senderPart)
    return other ? [key, other] : [key]
  })
}

/**
 * The email stored under `key` if the event's own sender sent it. For the other form of an email
 * key ({@link otherEmailKeyForm}): a mail stored before the upgrade and redelivered after (or the
 * reverse, from a Worker still on the old code) is that row; another sender's row under the old
 * key is not (that is the shadowing the new key ends).
 */
export function findEmailMessageOfSender(
  db: Queryable,
  event: InboundEvent,
  key: string,
): Promise<StoredMessage | null> {
  return selectStoredMessage(
    db,
    "m.channel = 'email' AND m.channel_message_id = $1 AND m.sender_external_id = $2",
    [key, event.sender.externalId],
  )
}

/**
 * Inserts the message and its `message.created` outbox row in one statement; a message whose
 * delete came first (a tombstone, {@link rememberDelete}) is stored deleted. Returns null when
 * another delivery already holds the key (`messages_channel_message_key`): then neither row is
 * written, so a duplicate can never produce a second downstream item. The outbox payload carries
 * ids and the channel, never the body.
 */
export async function insertMessageWithOutbox(
  tx: Queryable,
  event: InboundEvent,
  conversationId: string,
  customerId: string,
  editedAt: string | null,
): Promise<string | null> {
  const rows = await tx.query<{ message_id: string }>(
    `WITH inserted AS (
       INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id,
                             body, subject, payload_hash, first_delivery_key, occurred_at, edited_at,
                             edit_seq, attachments, deleted_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $12, $13::jsonb,
               (SELECT t.deleted_at FROM message_tombstones t
                 WHERE t.channel = $2 AND t.channel_message_id = $3))
       ON CONFLICT (channel, channel_message_id) WHERE channel_message_id IS NOT NULL DO NOTHING
       RETURNING id
     )
     INSERT INTO outbox (message_id, topic, payload)
     SELECT id, 'message.created', jsonb_build_object(
              'messageId', id::text, 'conversationId', $1::text,
              'customerId', $11::text, 'channel', $2::text)
       FROM inserted
     RETURNING message_id`,
    [
      conversationId,
      event.channel,
      event.messageKey,
      event.sender.externalId,
      event.body,
      event.subject ?? null,
      event.payloadHash,
      event.deliveryKey,
      event.occurredAt,
      editedAt,
      customerId,
      // A row created by an edit keeps the edit's sequence, so an older same-second edit loses.
      editedAt === null ? null : (event.editSeq ?? null),
      JSON.stringify(event.attachments ?? []),
    ],
  )
  return rows[0]?.message_id ?? null
}

/**
 * Applies an edit if it is newer than the last one applied: an edit that arrives after a newer
 * one (vendors do not order deliveries) or a replay changes nothing and returns null. Two edits
 * with the same time are ordered by `editSeq` (the larger wins; a row edited before sequences
 * existed has none, and an edit that has one wins over it).
 * `payload_hash` keeps the original message's hash, so a replay of the original is no mismatch.
 * An edit's attachments (the whole new message's: a new caption, a replaced photo) replace the
 * row's; an edit without any leaves them.
 */
export async function applyEdit(db: Queryable, event: InboundEvent): Promise<StoredMessage | null> {
  const media = event.attachments?.length ? JSON.stringify(event.attachments) : null
  const rows = await db.query<StoredMessageRow>(
    `UPDATE messages m
        SET body = $3, edited_at = $4, edit_seq = $5, updated_at = now(),
            attachments = COALESCE($6::jsonb, m.attachments)
       FROM conversations c
      WHERE c.id = m.conversation_id AND m.channel = $1 AND m.channel_message_id = $2
        AND (m.edited_at IS NULL OR m.edited_at < $4
             OR (m.edited_at = $4 AND $5::bigint IS NOT NULL
                 AND (m.edit_seq IS NULL OR m.edit_seq < $5)))
      RETURNING ${STORED_MESSAGE_COLUMNS}`,
    [event.channel, event.messageKey, event.body, event.occurredAt, event.editSeq ?? null, media],
  )
  return toStoredMessage(rows[0])
}

/** Marks the message deleted (soft: the row stays for audit); null if unknown or already deleted. */
/**
 * A delete of a message not stored (yet): remembered, so that the message, when it lands after
 * all, is stored deleted ({@link insertMessageWithOutbox}). The first delete's time is kept.
 */
export async function rememberDelete(db: Queryable, event: InboundEvent): Promise<void> {
  await db.query(
    `INSERT INTO message_tombstones (channel, channel_message_id, deleted_at, delivery_key)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (channel, channel_message_id) DO NOTHING`,
    [event.channel, event.messageKey, event.occurredAt, event.deliveryKey],
  )
}

export async function applyDelete(
  db: Queryable,
  event: InboundEvent,
): Promise<StoredMessage | null> {
  const rows = await db.query<StoredMessageRow>(
    `UPDATE messages m
        SET deleted_at = $3, updated_at = now()
       FROM conversations c
      WHERE c.id = m.conversation_id AND m.channel = $1 AND m.channel_message_id = $2
        AND m.deleted_at IS NULL
      RETURNING ${STORED_MESSAGE_COLUMNS}`,
    [event.channel, event.messageKey, event.occurredAt],
  )
  return toStoredMessage(rows[0])
}
