-- migrate:up
-- Event channel names are data (issue 24): a new channel (LINE, Messenger, ...) needs no
-- migration. The `channel` columns of customers, conversations and messages no longer list the
-- names; they check the form every name has, contract/event.ts's CHANNEL_NAME, so that a bug
-- elsewhere still cannot write a name no event could carry.
--
-- Every CHECK on a `channel` column goes, whatever its name: the original `{table}_channel_check`
-- (core tables) and any that a migration before this one put in its place (one widening the
-- list for another channel, such as `api`), found in pg_constraint by the column it covers.
-- The new CHECKs are NOT VALID: adding them then reads no row (a scan of messages under the
-- ALTER's lock would hold every write), and every existing row passed a stricter list already.
-- A long transaction on a table makes the ALTERs wait, and every write queue behind them: give
-- up after 2 s instead (npm run migrate retries; see ops/migrate.ts).
SET LOCAL lock_timeout = '2s';
DO $$
DECLARE
  c record;
BEGIN
  FOR c IN
    SELECT con.conrelid::regclass AS tbl, con.conname
      FROM pg_constraint con
      JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = ANY (con.conkey)
     WHERE con.contype = 'c' AND att.attname = 'channel'
       AND con.conrelid IN ('customers'::regclass, 'conversations'::regclass, 'messages'::regclass)
  LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tbl, c.conname);
  END LOOP;
END
$$;
ALTER TABLE customers ADD CONSTRAINT customers_channel_name
  CHECK (channel ~ '^[a-z][a-z0-9-]{0,31}$') NOT VALID;
ALTER TABLE conversations ADD CONSTRAINT conversations_channel_name
  CHECK (channel ~ '^[a-z][a-z0-9-]{0,31}$') NOT VALID;
ALTER TABLE messages ADD CONSTRAINT messages_channel_name
  CHECK (channel ~ '^[a-z][a-z0-9-]{0,31}$') NOT VALID;

-- migrate:down
-- The original lists (NOT VALID: rows of other channels written meanwhile stay).
SET LOCAL lock_timeout = '2s';
ALTER TABLE customers DROP CONSTRAINT customers_channel_name;
ALTER TABLE conversations DROP CONSTRAINT conversations_channel_name;
ALTER TABLE messages DROP CONSTRAINT messages_channel_name;
ALTER TABLE customers ADD CONSTRAINT customers_channel_check
  CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email')) NOT VALID;
ALTER TABLE conversations ADD CONSTRAINT conversations_channel_check
  CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email')) NOT VALID;
ALTER TABLE messages ADD CONSTRAINT messages_channel_check
  CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email')) NOT VALID;
