-- Merge rows that would violate the dedup unique indexes, so that
-- the unique-index migrations (0002, 0003) can build them on a database that predates them.
-- Run once in a maintenance window: psql "$DATABASE_URL" -f migrations/tools/merge-duplicates.sql
-- It is idempotent, prints what it merged, and keeps the oldest row of every group.
BEGIN;

-- 1. Messages sharing (channel, channel_message_id): keep the lowest id.
CREATE TEMP TABLE message_merge ON COMMIT DROP AS
SELECT id AS loser, min(id) OVER (PARTITION BY channel, channel_message_id) AS winner
FROM messages
WHERE channel_message_id IS NOT NULL;
DELETE FROM message_merge WHERE loser = winner;
SELECT count(*) AS duplicate_messages FROM message_merge;

-- Downstream rows of the losers: the winner already has its own outbox item, so drop theirs.
UPDATE channel_failures f SET message_id = m.winner, outbox_id = NULL
  FROM message_merge m WHERE f.message_id = m.loser;
DELETE FROM outbox o USING message_merge m WHERE o.message_id = m.loser;
DELETE FROM messages USING message_merge m WHERE messages.id = m.loser;

-- 2. More than one pending conversation per (customer, channel), email excepted: keep the oldest
--    pending, move the others' messages into it, and close the others.
CREATE TEMP TABLE conversation_merge ON COMMIT DROP AS
SELECT id AS loser, min(id) OVER (PARTITION BY customer_id, channel) AS winner
FROM conversations
WHERE status = 'pending' AND channel <> 'email';
DELETE FROM conversation_merge WHERE loser = winner;
SELECT count(*) AS duplicate_pending_conversations FROM conversation_merge;

UPDATE messages SET conversation_id = c.winner
  FROM conversation_merge c WHERE messages.conversation_id = c.loser;
UPDATE conversations SET status = 'closed', updated_at = now()
  FROM conversation_merge c WHERE conversations.id = c.loser;

COMMIT;
