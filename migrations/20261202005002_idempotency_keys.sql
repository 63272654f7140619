-- migrate:up
-- The durable layer of Idempotency-Key (issue 22): one row per (tenant, route, key), holding the
-- request's fingerprint and the response stored for it. Written in the transaction that writes
-- the message, so a stored answer exists exactly when its message does. The Redis claim in front
-- is the fast path; with Redis down, these rows decide alone.
CREATE TABLE idempotency_keys (
  tenant      text NOT NULL,
  -- The method and path the key was sent to (`POST /v1/messages`): a key is scoped to its route.
  route       text NOT NULL,
  -- SHA-256 (hex) of the client's Idempotency-Key: the key itself is the client's, not stored.
  key_hash    text NOT NULL,
  -- SHA-256 (hex) of method, path and canonical body: the same key with another request is 422.
  fingerprint text NOT NULL,
  status      smallint NOT NULL,
  -- json, not jsonb: json keeps the text as it came, key order included, so a replay is the same
  -- bytes as the first answer (jsonb would reorder the keys).
  body        json NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- Past it the row answers nothing (IDEMPOTENCY_TTL_SECONDS); a later request overwrites it.
  expires_at  timestamptz NOT NULL,
  CONSTRAINT idempotency_keys_pkey PRIMARY KEY (tenant, route, key_hash)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- migrate:down
DROP TABLE idempotency_keys;
