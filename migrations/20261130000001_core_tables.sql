-- migrate:up
-- Customers, conversations, messages and the downstream outbox. The unique indexes that make
-- deduplication durable come in the next migration, built CONCURRENTLY.

CREATE TABLE customers (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  channel      text NOT NULL CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email')),
  -- Slack team, Twilio AccountSid, Telegram bot id, receiving mailbox: ids are only unique inside it.
  tenant       text NOT NULL,
  external_id  text NOT NULL,
  display_name text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  -- Two first messages from a new sender arrive at once: both upsert the same row.
  CONSTRAINT customers_identity_key UNIQUE (channel, tenant, external_id)
);

CREATE TABLE conversations (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  customer_id bigint NOT NULL REFERENCES customers (id),
  channel     text NOT NULL CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email')),
  status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'open', 'closed')),
  subject     text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversations_customer_idx ON conversations (customer_id);

CREATE TABLE messages (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  conversation_id    bigint NOT NULL REFERENCES conversations (id),
  channel            text NOT NULL CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email')),
  -- The vendor's own id for the logical message, already scoped (team:channel:ts, chat:message_id,
  -- account:MessageSid, mailbox:Message-ID). NULL only for rows written by other paths.
  channel_message_id text,
  sender_external_id text NOT NULL,
  body               text NOT NULL DEFAULT '',
  subject            text,
  -- Short hash of what defines the message; a replay with another hash is a payload mismatch.
  payload_hash       text NOT NULL,
  -- Vendor delivery that first created the row (for audit: which Slack event_id, update_id, ...).
  first_delivery_key text NOT NULL,
  occurred_at        timestamptz NOT NULL,
  edited_at          timestamptz,
  deleted_at         timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_conversation_idx ON messages (conversation_id, id);

-- One downstream work item per new message, written in the message's transaction: a duplicate
-- delivery never reaches the insert, so it can never produce a second item.
CREATE TABLE outbox (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  message_id   bigint NOT NULL REFERENCES messages (id),
  topic        text NOT NULL,
  payload      jsonb NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  processed_at timestamptz,
  CONSTRAINT outbox_message_topic_key UNIQUE (message_id, topic)
);
CREATE INDEX outbox_unprocessed_idx ON outbox (id) WHERE processed_at IS NULL;

-- Events whose processing failed after they were accepted, kept for replay.
CREATE TABLE channel_failures (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  channel         text NOT NULL,
  stage           text NOT NULL,
  message_id      bigint REFERENCES messages (id),
  outbox_id       bigint REFERENCES outbox (id),
  delivery_key    text,
  event           jsonb,
  error           text NOT NULL,
  attempts        integer NOT NULL DEFAULT 0,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'dead', 'resolved')),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX channel_failures_due_idx ON channel_failures (next_attempt_at) WHERE status = 'pending';

-- migrate:down
DROP TABLE channel_failures;
DROP TABLE outbox;
DROP TABLE messages;
DROP TABLE conversations;
DROP TABLE customers;
