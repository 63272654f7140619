-- migrate:up
-- Deletes that arrived before their message (the spool queue does not keep order, and vendors do
-- not either): remembered here, so that the message, when it lands later, is stored as deleted
-- instead of staying visible. One row per message key; a new empty table takes no long lock.
CREATE TABLE message_tombstones (
  channel            text NOT NULL,
  channel_message_id text NOT NULL,
  deleted_at         timestamptz NOT NULL,
  delivery_key       text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (channel, channel_message_id)
);

-- migrate:down
DROP TABLE message_tombstones;
