-- migrate:up
-- Orders two edits of one message that carry the same time (Telegram's edit_date has one-second
-- resolution): the edit with the larger sequence (the event's editSeq, Telegram's update_id) wins.
-- NULL for messages never edited and for channels without a sequence. Adding a nullable column
-- without a default rewrites nothing.
-- A long transaction on the table makes this wait, and every write queue behind it: give up
-- after 2 s instead (npm run migrate retries; see ops/migrate.ts).
SET LOCAL lock_timeout = '2s';
ALTER TABLE messages ADD COLUMN IF NOT EXISTS edit_seq bigint CHECK (edit_seq >= 0);

-- migrate:down
ALTER TABLE messages DROP COLUMN edit_seq;
