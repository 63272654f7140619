-- migrate:up
-- Where the Gmail poller (origin/gmail/) resumes, per polled mailbox, shared by every origin pod.
--
-- history_id: the Gmail historyId to list changes after; NULL until the first full sync stored
-- one. Gmail's ids are unsigned 64-bit integers in decimal strings, hence numeric(20, 0).
--
-- lease_owner / lease_until: which poller may poll this mailbox now. A lease rather than a held
-- lock: a poll makes HTTP calls for seconds to minutes, and neither an open transaction nor a
-- session advisory lock should span that (PGlite, the local default, shares one backend between
-- all connections, so a session lock there excludes no one; over Neon's WebSockets a dropped
-- connection frees a session lock while its holder keeps polling). A lease is one short UPDATE to
-- take, renew and give back; a crashed poller's lease simply runs out; and the history_id write
-- is fenced on still holding it.
CREATE TABLE gmail_sync_state (
  mailbox     text PRIMARY KEY,
  history_id  numeric(20, 0) CHECK (history_id >= 0),
  lease_owner text,
  lease_until timestamptz,
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- migrate:down
DROP TABLE gmail_sync_state;
