-- migrate:up transaction:false
-- GET /metrics estimates the spool's oldest waiting event from the front doors' `spooled` counts
-- per minute (origin/spool-metrics.ts): this partial index holds only those rows, newest first,
-- so the read stays small however many other decisions the table keeps. Built CONCURRENTLY
-- (alone in this file: it cannot run in a transaction) so the Worker's flushes go on meanwhile.
CREATE INDEX CONCURRENTLY IF NOT EXISTS gateway_decisions_spooled_idx
  ON gateway_decisions (channel, bucket DESC) WHERE decision = 'spooled';

-- migrate:down transaction:false
DROP INDEX CONCURRENTLY IF EXISTS gateway_decisions_spooled_idx;
