-- migrate:up
-- Inbound events that could not be stored after the gateway had answered the vendor "ok": a
-- queued event that ran out of retries (the spool's dead-letter queue) or a Gmail message that
-- could not be fetched or parsed. They are channel_failures rows with stage 'inbound', kept for
-- `npm run failures -- replay`, which sends them through the same idempotent ingest path.
--
-- source: where the failure was recorded ('queue' = the Worker's dead-letter consumer, 'gmail' =
-- the origin's poller). source_ref: the source's own id when there is no event to keep (the
-- Gmail message id of a message that could not be fetched). Nullable columns without a default
-- rewrite nothing and take a short lock only.
-- A long transaction on the table makes this wait, and every write queue behind it: give up
-- after 2 s instead (npm run migrate retries; see ops/migrate.ts).
SET LOCAL lock_timeout = '2s';
ALTER TABLE channel_failures ADD COLUMN IF NOT EXISTS source text,
  ADD COLUMN IF NOT EXISTS source_ref text;

-- migrate:down
ALTER TABLE channel_failures DROP COLUMN IF EXISTS source_ref, DROP COLUMN IF EXISTS source;
