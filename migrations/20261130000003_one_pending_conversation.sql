-- migrate:up transaction:false
-- At most one pending conversation per customer and channel (ADR-013), so two first messages from
-- a new sender at once join one conversation. Email threads follow In-Reply-To/References instead,
-- hence excluded. CONCURRENTLY and alone in its file for the reasons given in the previous
-- migration; the same recovery applies (merge-duplicates.sql merges pending conversations too).
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS conversations_one_pending_key
  ON conversations (customer_id, channel)
  WHERE status = 'pending' AND channel <> 'email';

-- migrate:down transaction:false
DROP INDEX CONCURRENTLY IF EXISTS conversations_one_pending_key;
