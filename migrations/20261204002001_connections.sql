-- migrate:up
-- Channel connections as data (origin/connections/): one tenant's channel account, its sealed
-- secrets (ORIGIN_KEKS, shared/envelope.ts), the audit of every change and the outbox the
-- publisher drains into Workers KV. New tables only: nothing live is locked.
SET LOCAL lock_timeout = '2s';

CREATE TABLE connections (
  id          text PRIMARY KEY CHECK (id ~ '^c_[a-z2-7]{26}$'),
  channel     text NOT NULL CHECK (channel ~ '^[a-z][a-z0-9-]{0,31}$'),
  -- The vendor account (Slack api_app_id, Twilio AccountSid, bot id, Meta app id, ...).
  account     text NOT NULL CHECK (octet_length(account) BETWEEN 1 AND 320),
  -- What the connection may write for (Slack workspaces, Meta pages / numbers, API key hashes).
  ids         text[] NOT NULL DEFAULT '{}' CHECK (cardinality(ids) <= 1000),
  settings    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
  status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  -- Every change adds one; the edge record and the events it verified carry it.
  version     bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  -- The newest version an event said the edge verified with, and when (origin/ingest.ts).
  edge_version bigint,
  edge_seen_at timestamptz,
  UNIQUE (channel, account)
);
-- A Meta app's pages / numbers and the API's key hashes are looked up by id (one owner each).
CREATE INDEX connections_ids_idx ON connections USING gin (ids);

CREATE TABLE connection_secrets (
  -- Orders a field's secrets as they were given (an import's `new|old`).
  seq           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  connection_id text NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  field         text NOT NULL CHECK (field ~ '^[a-z_]{1,32}$'),
  kid           text NOT NULL CHECK (kid ~ '^[A-Za-z0-9_-]{1,32}$'),
  -- Sealed with ORIGIN_KEKS under secretAad(connection_id, field, kid); never the plaintext.
  sealed        text NOT NULL CHECK (octet_length(sealed) <= 16384),
  -- `sha256:` + 8 hex of the secret: what the API and the console show.
  fingerprint   text NOT NULL CHECK (fingerprint ~ '^sha256:[0-9a-f]{8}$'),
  -- Null for a current secret; a replaced one verifies until then.
  not_after     timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (connection_id, field, kid)
);

-- Every change, by whom; no foreign key: the trail outlives a deleted connection. Never a secret.
CREATE TABLE connection_audit (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  connection_id text NOT NULL,
  action        text NOT NULL,
  actor         text NOT NULL,
  at            timestamptz NOT NULL DEFAULT now(),
  detail        jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX connection_audit_connection_idx ON connection_audit (connection_id, id);

-- The outbox of the edge copy: written in each change's transaction, drained by the publisher.
-- `remove_keys`: KV keys this change makes stale (a deleted record, an id no longer listed).
CREATE TABLE connection_publications (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  connection_id text NOT NULL,
  version       bigint NOT NULL,
  kind          text NOT NULL CHECK (kind IN ('put', 'delete')),
  remove_keys   text[] NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now(),
  published_at  timestamptz
);
CREATE INDEX connection_publications_pending_idx ON connection_publications (id)
  WHERE published_at IS NULL;
CREATE INDEX connection_publications_connection_idx ON connection_publications (connection_id, id);

-- migrate:down
SET LOCAL lock_timeout = '2s';
DROP TABLE connection_publications;
DROP TABLE connection_audit;
DROP TABLE connection_secrets;
DROP TABLE connections;
