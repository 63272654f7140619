-- migrate:up
-- A one-time signature (WeChat plain mode signs no body) bound to the hash of the body it first
-- came with: the origin's copy of the Worker's Redis binding (worker/signature-once.ts), so Redis
-- down or flushed forgets no binding. Rows outlive their signature's window, then are swept.
SET LOCAL lock_timeout = '2s';
CREATE TABLE signature_bindings (
  key text PRIMARY KEY CHECK (octet_length(key) <= 256),
  body_hash text NOT NULL CHECK (body_hash ~ '^[0-9a-f]{8,64}$'),
  expires_at timestamptz NOT NULL
);
CREATE INDEX signature_bindings_expires_at_idx ON signature_bindings (expires_at);

-- migrate:down
SET LOCAL lock_timeout = '2s';
DROP TABLE signature_bindings;
