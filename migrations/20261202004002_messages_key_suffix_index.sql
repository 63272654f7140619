-- migrate:up transaction:false
-- Console lookup by a vendor id (Slack ts, Twilio MessageSid, Telegram message id, Message-ID):
-- message keys end with ":{id}", so an index on the reversed key serves "ends with" as a prefix
-- match. Built CONCURRENTLY (alone in this file: it cannot run in a transaction) so writes to a
-- large messages table go on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_key_suffix_idx
  ON messages (reverse(channel_message_id) text_pattern_ops);

-- migrate:down transaction:false
DROP INDEX CONCURRENTLY IF EXISTS messages_key_suffix_idx;
