-- migrate:up transaction:false
-- Search by content within a time range, newest first: with the messages stored in the range in
-- order, a phrase that many messages hold is answered by reading the newest rows until enough
-- match, instead of every match in the table (the trigram index serves the rare ones). Built
-- CONCURRENTLY (alone in this file) so ingest goes on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_created_idx ON messages (created_at, id);

-- migrate:down transaction:false
DROP INDEX CONCURRENTLY IF EXISTS messages_created_idx;
