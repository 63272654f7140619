-- migrate:up
-- The outbox relay (origin/outbox/) and its failure replay (origin/failures/).
--
-- relay_lease_until: a relay took this row and is handing it downstream until then. The row is
-- claimed with FOR UPDATE SKIP LOCKED in a short transaction that sets the lease and commits; the
-- HTTP call runs outside any transaction (a transaction held open across it would pin a pool
-- connection per relay and, on PGlite, the local default, stall every other connection). A relay
-- that dies mid hand-off leaves a lease that simply runs out; another relay takes the row then,
-- with the same Idempotency-Key. Adding a nullable column without a default rewrites nothing.
-- A long transaction on the table makes this wait, and every write queue behind it: give up
-- after 2 s instead (npm run migrate retries; see ops/migrate.ts).
SET LOCAL lock_timeout = '2s';
ALTER TABLE outbox ADD COLUMN relay_lease_until timestamptz;

-- At most one downstream failure row per outbox row: replays update it, never add a second.
-- Not CONCURRENTLY: nothing wrote channel_failures before this migration, so the build is instant
-- and the short lock blocks no one.
CREATE UNIQUE INDEX channel_failures_outbox_stage_key
  ON channel_failures (outbox_id, stage)
  WHERE outbox_id IS NOT NULL;

-- The operator's list (npm run failures -- list --status dead) reads by status.
CREATE INDEX channel_failures_status_idx ON channel_failures (status, id);

-- migrate:down
DROP INDEX channel_failures_status_idx;
DROP INDEX channel_failures_outbox_stage_key;
ALTER TABLE outbox DROP COLUMN relay_lease_until;
