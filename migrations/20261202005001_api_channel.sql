-- migrate:up
-- Channel `api`: messages our own clients post to POST /v1/messages (issue 22). The three channel
-- CHECKs are widened. Added NOT VALID: every existing row passes the wider check by construction,
-- so nothing is scanned while the table is locked (dbmate's transaction holds the lock to commit).
SET LOCAL lock_timeout = '2s';

ALTER TABLE customers DROP CONSTRAINT customers_channel_check,
  ADD CONSTRAINT customers_channel_check
    CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email', 'api')) NOT VALID;
ALTER TABLE conversations DROP CONSTRAINT conversations_channel_check,
  ADD CONSTRAINT conversations_channel_check
    CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email', 'api')) NOT VALID;
ALTER TABLE messages DROP CONSTRAINT messages_channel_check,
  ADD CONSTRAINT messages_channel_check
    CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email', 'api')) NOT VALID;

-- migrate:down
SET LOCAL lock_timeout = '2s';

ALTER TABLE customers DROP CONSTRAINT customers_channel_check,
  ADD CONSTRAINT customers_channel_check
    CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email')) NOT VALID;
ALTER TABLE conversations DROP CONSTRAINT conversations_channel_check,
  ADD CONSTRAINT conversations_channel_check
    CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email')) NOT VALID;
ALTER TABLE messages DROP CONSTRAINT messages_channel_check,
  ADD CONSTRAINT messages_channel_check
    CHECK (channel IN ('slack', 'whatsapp', 'sms', 'telegram', 'email')) NOT VALID;
