-- migrate:up transaction:false
-- Console lookup by a delivery id (Slack event_id, Telegram update_id): the message's first
-- delivery key ends with ":{id}". CONCURRENTLY, alone, as 20261202004002.
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_delivery_suffix_idx
  ON messages (reverse(first_delivery_key) text_pattern_ops);

-- migrate:down transaction:false
DROP INDEX CONCURRENTLY IF EXISTS messages_delivery_suffix_idx;
