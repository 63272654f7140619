-- migrate:up transaction:false
-- The durable dedup backstop (ADR-013 layer 2) for messages. Built CONCURRENTLY so that adding it
-- to a live database does not block writes; that is why this file runs outside a transaction, and
-- why it holds one statement (Postgres runs a multi-statement string as one implicit transaction).
--
-- On a database that already holds duplicates the build fails and leaves an INVALID index behind.
-- Then: `DROP INDEX CONCURRENTLY messages_channel_message_key;`, merge the duplicates with
-- `psql "$DATABASE_URL" -f migrations/tools/merge-duplicates.sql`, and run `npm run migrate` again.
--
-- A logical message exists once per channel. The ADR indexed channel_message_id alone; scoping by
-- channel keeps two channels' ids apart, and the tenant/chat scope lives inside the id itself
-- (Telegram "chat:message_id", Slack "team:channel:ts"), so message 42 in two chats is two rows.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS messages_channel_message_key
  ON messages (channel, channel_message_id)
  WHERE channel_message_id IS NOT NULL;

-- migrate:down transaction:false
DROP INDEX CONCURRENTLY IF EXISTS messages_channel_message_key;
