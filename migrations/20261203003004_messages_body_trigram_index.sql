-- migrate:up transaction:false
-- Search by content: a trigram index of the message text, so `body ILIKE '%text%'` reads the rows
-- that hold the text's trigrams instead of every message. Built CONCURRENTLY (alone in this file:
-- it cannot run in a transaction) so ingest goes on writing to messages meanwhile; on a large
-- table it takes minutes, and until it is there a search is bounded by its statement timeout.
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_body_trgm_idx
  ON messages USING gin (body gin_trgm_ops);

-- migrate:down transaction:false
DROP INDEX CONCURRENTLY IF EXISTS messages_body_trgm_idx;
