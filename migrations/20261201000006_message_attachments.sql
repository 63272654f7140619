-- migrate:up
-- Attachments' metadata (kind, vendor media id or URL, MIME type, size, file name, caption; or a
-- location / contact card as structured content), never their bytes. A constant default is a
-- catalog-only change (Postgres 11+): no table rewrite, no long lock on a large messages table.
-- The CHECK is NOT VALID for the same reason; every existing row holds the default, an array.
-- A long transaction on the table makes this wait, and every write queue behind it: give up
-- after 2 s instead (npm run migrate retries; see ops/migrate.ts).
SET LOCAL lock_timeout = '2s';
ALTER TABLE messages ADD COLUMN attachments jsonb NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE messages ADD CONSTRAINT messages_attachments_is_array
  CHECK (jsonb_typeof(attachments) = 'array') NOT VALID;

-- migrate:down
ALTER TABLE messages DROP COLUMN attachments;
