/**
 * Turns one verified, validated inbound event into exactly one message row, however many times it
 * arrives and on however many origin processes. Postgres decides every duplicate (the partial unique
 * indexes of migrations/); nothing in memory does, so active-active processes agree.
 *
 * A new message is one transaction: customer, conversation, message, outbox row. A lost race on the
 * message key rolls the whole transaction back, so the loser leaves no customer, conversation or
 * outbox row behind, and answers with the winner's ids.
 * @module
 */
import { emailSenderKeyPart, otherEmailKeyForm } from '../contract/email-keys'
import { type InboundEvent, type IngestResult, payloadHashOf } from '../contract/event'
import type { Database, Queryable } from './db'
import {
  applyDelete,
  applyEdit,
  findEmailMessageOfSender,
  findMessage,
  findOrCreateEmailConversation,
  findOrCreatePendingConversation,
  insertMessageWithOutbox,
  rememberDelete,
  type StoredMessage,
  upsertCustomer,
} from './store'

/** Thrown inside the transaction when another delivery holds the message key: roll back. */
class LostRace extends Error {
  constructor() {
    super('another delivery created this message first')
    this.name = 'LostRace'
  }
}

const IGNORED: IngestResult = {
  outcome: 'ignored',
  duplicate: false,
  messageId: null,
  conversationId: null,
  customerId: null,
}

function resultFor(
  outcome: IngestResult['outcome'],
  message: Pick<StoredMessage, 'messageId' | 'conversationId' | 'customerId'>,
): IngestResult {
  return {
    outcome,
    duplicate: outcome === 'duplicate',
    messageId: message.messageId,
    conversationId: message.conversationId,
    customerId: message.customerId,
  }
}

/**
 * A replay of a known message. A different payload hash under the same key is a mismatch: the
 * first stays (it may already be downstream), the caller logs and counts it. A row that was edited
 * may have been created by the edit itself (see {@link ingestEdit}) and then holds the edit's
 * hash, so its hash proves nothing and no mismatch is claimed for it.
 */
function duplicateOf(winner: StoredMessage, event: InboundEvent): IngestResult {
  return {
    ...resultFor('duplicate', winner),
    payloadMismatch: !winner.edited && winner.payloadHash !== event.payloadHash,
  }
}

async function createMessage(
  tx: Queryable,
  event: InboundEvent,
  editedAt: string | null,
): Promise<IngestResult> {
  const customerId = await upsertCustomer(tx, event)
  const conversationId =
    event.channel === 'email'
      ? await findOrCreateEmailConversation(tx, customerId, event)
      : await findOrCreatePendingConversation(tx, customerId, event)
  const messageId = await insertMessageWithOutbox(tx, event, conversationId, customerId, editedAt)
  if (messageId === null) throw new LostRace()
  return resultFor('created', { messageId, conversationId, customerId })
}

/**
 * Creates the message in one transaction; null when another delivery won the key (everything this
 * attempt wrote is rolled back, so no empty conversation or stray customer is left).
 */
async function tryCreate(
  db: Database,
  event: InboundEvent,
  editedAt: string | null,
): Promise<IngestResult | null> {
  try {
    return await db.transaction((tx) => createMessage(tx, event, editedAt))
  } catch (err) {
    if (err instanceof LostRace) return null
    throw err
  }
}

async function winnerOf(db: Database, event: InboundEvent): Promise<StoredMessage> {
  const winner = await findMessage(db, event)
  // The insert only reports a conflict once the conflicting row is committed, so it is visible.
  if (!winner) throw new Error('message key conflicted but no winner row was found')
  return winner
}

/**
 * An email stored under the other form of its key (before the sender was part of email keys, or
 * after, when this event comes from a Worker still on the old code): a duplicate of that row, if
 * it is the same sender's. Its hash was taken over that key, so the mismatch check uses it too.
 * Checked before the insert only: the old form is written by old code alone, so a race between
 * the two forms exists only while both versions run.
 */
async function otherKeyFormDuplicate(
  db: Database,
  event: InboundEvent,
): Promise<IngestResult | null> {
  if (event.channel !== 'email') return null
  const senderPart = await emailSenderKeyPart(event.sender.externalId)
  const otherKey = otherEmailKeyForm(event.messageKey, event.tenant, senderPart)
  if (!otherKey) return null
  const stored = await findEmailMessageOfSender(db, event, otherKey)
  if (!stored) return null
  const payloadHash = await payloadHashOf({ ...event, messageKey: otherKey })
  return duplicateOf(stored, { ...event, payloadHash })
}

async function ingestMessage(db: Database, event: InboundEvent): Promise<IngestResult> {
  // The cheap path first: most duplicates are plain replays of a committed message.
  const known = await findMessage(db, event)
  if (known) return duplicateOf(known, event)
  const otherForm = await otherKeyFormDuplicate(db, event)
  if (otherForm) return otherForm
  const created = await tryCreate(db, event, null)
  return created ?? duplicateOf(await winnerOf(db, event), event)
}

/**
 * Edits update the existing row (never a second message). An edit of a message we never saw is
 * stored as the message: the edit carries the full current text, and the original may never come
 * (its delivery lost, or older than the vendor's retry window); if it does come later, it is a
 * duplicate and the edited text stays.
 */
async function ingestEdit(db: Database, event: InboundEvent): Promise<IngestResult> {
  const edited = await applyEdit(db, event)
  if (edited) return resultFor('updated', edited)
  const known = await findMessage(db, event)
  if (known) {
    // Known: a replay, or an older edit arriving late; or the message itself committed between
    // the UPDATE and this lookup (it raced its own edit), so the UPDATE is tried once more.
    const raced = await applyEdit(db, event)
    return raced ? resultFor('updated', raced) : resultFor('duplicate', known)
  }
  const created = await tryCreate(db, event, event.occurredAt)
  if (created) return created
  // The original (or this same edit) was created meanwhile: apply the edit to it, once.
  const raced = await applyEdit(db, event)
  return raced ? resultFor('updated', raced) : resultFor('duplicate', await winnerOf(db, event))
}

/** Deletes mark the row; a repeat is a duplicate; a message not stored yet is remembered (ignored). */
async function ingestDelete(db: Database, event: InboundEvent): Promise<IngestResult> {
  const deleted = await applyDelete(db, event)
  if (deleted) return resultFor('updated', deleted)
  const known = await findMessage(db, event)
  if (known) return resultFor('duplicate', known)
  // The delete overtook its message (a queued original, a vendor's own reordering): remember it,
  // then look once more, for a message that committed in between.
  await rememberDelete(db, event)
  const late = await applyDelete(db, event)
  return late ? resultFor('updated', late) : IGNORED
}

export function ingestEvent(db: Database, event: InboundEvent): Promise<IngestResult> {
  switch (event.kind) {
    case 'message':
      return ingestMessage(db, event)
    case 'edit':
      return ingestEdit(db, event)
    case 'delete':
      return ingestDelete(db, event)
  }
}
