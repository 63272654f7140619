-- migrate:up transaction:false
-- One inbound failure row per delivery: a dead-letter consumer that records the same event twice
-- (its own retry after a lost answer, a redelivered batch) updates the row instead of adding one.
-- CONCURRENTLY (hence alone in a file outside a transaction): channel_failures may be large.
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS channel_failures_inbound_key
  ON channel_failures (delivery_key)
  WHERE stage = 'inbound';

-- migrate:down transaction:false
DROP INDEX CONCURRENTLY IF EXISTS channel_failures_inbound_key;
