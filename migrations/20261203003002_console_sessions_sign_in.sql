-- migrate:up
-- A console session signed in with a token or with Cloudflare Access's assertion: an Access
-- session holds only while each request carries a valid assertion for the same person and role
-- (origin/console/sign-in.tsx); a token session while its token is configured.
SET LOCAL lock_timeout = '2s';
ALTER TABLE console_sessions
  ADD COLUMN signed_in_with text NOT NULL DEFAULT 'token'
  CHECK (signed_in_with IN ('token', 'access'));

-- migrate:down
SET LOCAL lock_timeout = '2s';
ALTER TABLE console_sessions DROP COLUMN signed_in_with;
