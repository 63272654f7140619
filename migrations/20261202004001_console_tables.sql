-- migrate:up
-- The operator console (origin/console/): what the gateway decided, in minute buckets; a bounded
-- sample of keyed decisions for lookup; sign-in sessions; the audit of replays; bulk replay runs.
-- It adds an index to channel_failures, a live table: give up a blocked lock in 2 s rather than
-- queue every write behind it (npm run migrate retries; see docs/design.md).
SET LOCAL lock_timeout = '2s';

-- Per-minute counts flushed by each Worker isolate (POST /v1/decisions), added up on conflict.
-- The decision time is a histogram in fixed buckets (ms_le_*: at most that many ms), so a p50 /
-- p99 is read from the counts without keeping one row per delivery.
CREATE TABLE gateway_decisions (
  bucket      timestamptz NOT NULL,
  channel     text NOT NULL,
  decision    text NOT NULL,
  decided_by  text NOT NULL,
  -- Why, when there is a stable code (bad_signature, tenant_mismatch, inflight, ...); '' otherwise.
  reason      text NOT NULL DEFAULT '',
  count       bigint NOT NULL DEFAULT 0,
  ms_le_5     bigint NOT NULL DEFAULT 0,
  ms_le_20    bigint NOT NULL DEFAULT 0,
  ms_le_50    bigint NOT NULL DEFAULT 0,
  ms_le_200   bigint NOT NULL DEFAULT 0,
  ms_le_1000  bigint NOT NULL DEFAULT 0,
  ms_over     bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (bucket, channel, decision, decided_by, reason)
);

-- Keyed decisions that never reach Postgres otherwise (Redis duplicates, retries, spooled), as
-- the flush samples them (bounded per flush): lookup shows which layer answered each delivery.
CREATE TABLE gateway_decision_keys (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_key text NOT NULL,
  channel      text NOT NULL,
  decision     text NOT NULL,
  decided_by   text NOT NULL,
  reason       text NOT NULL DEFAULT '',
  payload_mismatch boolean NOT NULL DEFAULT false,
  -- A mismatch's hashes: the one Redis kept for the key, and the resent delivery's.
  stored_hash  text,
  offered_hash text,
  ms           integer NOT NULL DEFAULT 0,
  decided_at   timestamptz NOT NULL
);
CREATE INDEX gateway_decision_keys_key_idx ON gateway_decision_keys (delivery_key, decided_at);
CREATE INDEX gateway_decision_keys_suffix_idx
  ON gateway_decision_keys (reverse(delivery_key) text_pattern_ops);
CREATE INDEX gateway_decision_keys_at_idx ON gateway_decision_keys (decided_at);

-- Replays with other content under a known key, as the origin's ingest saw them: both hashes.
CREATE TABLE payload_mismatches (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  channel       text NOT NULL,
  delivery_key  text NOT NULL,
  message_key   text,
  message_id    bigint,
  stored_hash   text,
  offered_hash  text NOT NULL,
  seen_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX payload_mismatches_seen_idx ON payload_mismatches (seen_at DESC, id DESC);

-- A signed-in operator: only the SHA-256 of the cookie's random token is kept.
CREATE TABLE console_sessions (
  token_hash  text PRIMARY KEY,
  token_name  text NOT NULL,
  -- SHA-256 of the token that signed in: a session ends when its token is no longer configured
  -- (rotated, removed, its role changed), not only when it expires.
  token_digest text NOT NULL,
  role        text NOT NULL CHECK (role IN ('viewer', 'operator')),
  csrf_token  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
CREATE INDEX console_sessions_expiry_idx ON console_sessions (expires_at);

-- Each flushed batch's id, so that a batch resent (after a timeout) or replayed is counted once.
CREATE TABLE gateway_decision_batches (
  id           uuid PRIMARY KEY,
  recorded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX gateway_decision_batches_recorded_idx ON gateway_decision_batches (recorded_at);

-- Who did what, when, with which result (replays; sign-ins).
CREATE TABLE console_audit (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT now(),
  actor      text NOT NULL,
  action     text NOT NULL,
  target     text NOT NULL DEFAULT '',
  result     text NOT NULL DEFAULT ''
);
CREATE INDEX console_audit_at_idx ON console_audit (at DESC);

-- A bulk replay: the filter it was started with, its counts, cancel on request.
CREATE TABLE console_jobs (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind        text NOT NULL DEFAULT 'bulk_replay',
  filter      jsonb NOT NULL,
  actor       text NOT NULL,
  status      text NOT NULL DEFAULT 'running'
              CHECK (status IN ('running', 'done', 'cancelled', 'failed')),
  total       integer NOT NULL,
  done        integer NOT NULL DEFAULT 0,
  resolved    integer NOT NULL DEFAULT 0,
  failed      integer NOT NULL DEFAULT 0,
  -- The last failure id taken: the run walks ids upwards, so it resumes and never repeats one.
  cursor_id   bigint NOT NULL DEFAULT 0,
  cancel_requested boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- The failures list: filtered by channel / stage / status, newest first, paged by id.
CREATE INDEX channel_failures_list_idx ON channel_failures (status, channel, stage, id DESC);
CREATE INDEX channel_failures_created_idx ON channel_failures (created_at DESC, id DESC);
-- Lookup: a message's failures (downstream rows name it).
CREATE INDEX channel_failures_message_idx ON channel_failures (message_id) WHERE message_id IS NOT NULL;
-- Lookup by a vendor id: the key ends with ":{id}".
CREATE INDEX channel_failures_key_suffix_idx
  ON channel_failures (reverse(delivery_key) text_pattern_ops);

-- migrate:down
DROP INDEX channel_failures_key_suffix_idx;
DROP INDEX channel_failures_message_idx;
DROP INDEX channel_failures_created_idx;
DROP INDEX channel_failures_list_idx;
DROP TABLE console_jobs;
DROP TABLE payload_mismatches;
DROP TABLE gateway_decision_batches;
DROP TABLE console_audit;
DROP TABLE console_sessions;
DROP TABLE gateway_decision_keys;
DROP TABLE gateway_decisions;
