-- migrate:up
-- A batch of events (the spool consumer's queue batch, POST /v1/events/batch) in one statement:
-- one database round trip and one transaction for the whole batch instead of one (or, for an
-- edit or a delete, two or three) per event. Each event gets the outcome single ingest
-- (origin/ingest.ts) would give it, applied in the batch's order: ingest_message() itself for a
-- new message, and the same UPDATEs and look-ups as the origin's edit and delete paths.
--
-- Locks: every key lock the batch can need is taken first, in one order for every batch (the lock
-- ids sorted), so two batches never wait for each other in a loop. Besides each event's message key
-- (lock_message_key's lock, space 13) that is each new sender's customer (space 14): two batches
-- inserting the same two new customers in opposite orders would otherwise deadlock on
-- customers_identity_key. A single ingest takes at most one key lock and writes one customer, so it
-- cannot close a loop with a batch. Held until the batch commits; a batch is short.
--
-- One event that fails (an unexpected SQLSTATE) does not fail the others: its own subtransaction is
-- rolled back and its row says `failed` with the SQLSTATE; the origin ingests it on its own.
--
-- The event, flattened by origin/ingest-batch.ts: kind, channel, tenant, messageKey, sender,
-- displayName, body, subject, payloadHash, deliveryKey, occurredAt, editSeq, attachments, and for
-- email otherKey and references (computed there, as for ingest_message()).

-- The row of (channel, key) if its customer is the tenant's (origin/store.ts ofTenant), as
-- ingest_message() answers.
CREATE FUNCTION batch_row_of(p_channel text, p_key text, p_tenant text)
RETURNS TABLE (message_id bigint, conversation_id bigint, customer_id bigint,
               payload_hash text, edited boolean)
LANGUAGE sql STABLE AS $$
  SELECT m.id, m.conversation_id, c.customer_id, m.payload_hash, m.edited_at IS NOT NULL
    FROM messages m JOIN conversations c ON c.id = m.conversation_id
   WHERE m.channel = p_channel AND m.channel_message_id = p_key
     AND EXISTS (SELECT 1 FROM customers cu WHERE cu.id = c.customer_id AND cu.tenant = p_tenant)
$$;

-- applyEdit (origin/store.ts): only a newer edit changes the row; its attachments, if any,
-- replace the row's. The edited row, or nothing.
CREATE FUNCTION batch_apply_edit(e jsonb) RETURNS SETOF bigint
LANGUAGE sql AS $$
  UPDATE messages m
     SET body = e->>'body', edited_at = (e->>'occurredAt')::timestamptz,
         edit_seq = (e->>'editSeq')::bigint, updated_at = now(),
         attachments = COALESCE(CASE WHEN jsonb_typeof(e->'attachments') = 'array'
                                      AND jsonb_array_length(e->'attachments') > 0
                                     THEN e->'attachments' END, m.attachments)
    FROM conversations c
   WHERE c.id = m.conversation_id AND m.channel = e->>'channel'
     AND m.channel_message_id = e->>'messageKey'
     AND EXISTS (SELECT 1 FROM customers cu WHERE cu.id = c.customer_id AND cu.tenant = e->>'tenant')
     AND (m.edited_at IS NULL OR m.edited_at < (e->>'occurredAt')::timestamptz
          OR (m.edited_at = (e->>'occurredAt')::timestamptz AND e->>'editSeq' IS NOT NULL
              AND (m.edit_seq IS NULL OR m.edit_seq < (e->>'editSeq')::bigint)))
  RETURNING m.id
$$;

-- applyDelete (origin/store.ts): marks the row deleted. The deleted row, or nothing.
CREATE FUNCTION batch_apply_delete(e jsonb) RETURNS SETOF bigint
LANGUAGE sql AS $$
  UPDATE messages m SET deleted_at = (e->>'occurredAt')::timestamptz, updated_at = now()
    FROM conversations c
   WHERE c.id = m.conversation_id AND m.channel = e->>'channel'
     AND m.channel_message_id = e->>'messageKey'
     AND EXISTS (SELECT 1 FROM customers cu WHERE cu.id = c.customer_id AND cu.tenant = e->>'tenant')
     AND m.deleted_at IS NULL
  RETURNING m.id
$$;

-- One event of a batch, as origin/ingest.ts ingests it alone: `created`, `known` or `other_form`
-- (ingest_message()), `updated`, `ignored`.
CREATE FUNCTION ingest_batch_event(e jsonb) RETURNS TABLE (
  outcome         text,
  message_id      bigint,
  conversation_id bigint,
  customer_id     bigint,
  payload_hash    text,
  edited          boolean
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_channel text := e->>'channel';
  v_key     text := e->>'messageKey';
  v_tenant  text := e->>'tenant';
  v_edit    boolean := e->>'kind' = 'edit';
  v_new     record;
BEGIN
  IF v_edit AND EXISTS (SELECT FROM batch_apply_edit(e)) THEN
    RETURN QUERY SELECT 'updated', r.* FROM batch_row_of(v_channel, v_key, v_tenant) r;
    RETURN;
  END IF;

  IF e->>'kind' = 'delete' THEN
    -- ingestDelete: the update, the look-up, then the tombstone and the update once more (the
    -- message key's lock is held already, since the batch began).
    IF NOT EXISTS (SELECT FROM batch_apply_delete(e)) THEN
      RETURN QUERY SELECT 'known', r.* FROM batch_row_of(v_channel, v_key, v_tenant) r;
      IF FOUND THEN RETURN; END IF;
      INSERT INTO message_tombstones (channel, channel_message_id, deleted_at, delivery_key)
      VALUES (v_channel, v_key, (e->>'occurredAt')::timestamptz, e->>'deliveryKey')
      ON CONFLICT (channel, channel_message_id) DO NOTHING;
      IF NOT EXISTS (SELECT FROM batch_apply_delete(e)) THEN
        RETURN QUERY SELECT 'ignored', NULL::bigint, NULL::bigint, NULL::bigint, NULL::text, false;
        RETURN;
      END IF;
    END IF;
    RETURN QUERY SELECT 'updated', r.* FROM batch_row_of(v_channel, v_key, v_tenant) r;
    RETURN;
  END IF;

  -- A new message, or an edit of a message never seen: stored edited, with its sequence.
  SELECT * INTO STRICT v_new FROM ingest_message(
    v_channel, v_tenant, v_key, e->>'sender', e->>'displayName', e->>'body', e->>'subject',
    e->>'payloadHash', e->>'deliveryKey', (e->>'occurredAt')::timestamptz,
    CASE WHEN v_edit THEN (e->>'occurredAt')::timestamptz END,
    CASE WHEN v_edit THEN (e->>'editSeq')::bigint END,
    COALESCE(CASE WHEN jsonb_typeof(e->'attachments') = 'array' THEN e->'attachments' END, '[]'),
    e->>'otherKey',
    CASE WHEN jsonb_typeof(e->'references') = 'array'
         THEN ARRAY(SELECT jsonb_array_elements_text(e->'references')) END);
  -- An edit that found its message known (a replay, an older edit, or the message itself stored
  -- meanwhile): the update once more, as ingestEdit does.
  IF v_edit AND v_new.outcome <> 'created' AND EXISTS (SELECT FROM batch_apply_edit(e)) THEN
    RETURN QUERY SELECT 'updated', r.* FROM batch_row_of(v_channel, v_key, v_tenant) r;
    RETURN;
  END IF;
  RETURN QUERY SELECT v_new.outcome, v_new.message_id, v_new.conversation_id, v_new.customer_id,
                      v_new.payload_hash, v_new.edited;
END
$$;

CREATE FUNCTION ingest_events(p_events jsonb) RETURNS TABLE (
  ord             int,
  outcome         text,
  message_id      bigint,
  conversation_id bigint,
  customer_id     bigint,
  payload_hash    text,
  edited          boolean,
  sqlstate        text
) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_lock  record;
  v_event record;
BEGIN
  FOR v_lock IN
    SELECT DISTINCT l.space, l.id
      FROM jsonb_array_elements(p_events) e,
           LATERAL (VALUES
             -- lock_message_key()'s lock (migration 20261202000001)
             (13, hashtext((e->>'channel') || ':' || (e->>'messageKey'))),
             (14, CASE WHEN e->>'kind' <> 'delete'
                       THEN hashtext((e->>'channel') || ':' || (e->>'tenant') || ':' || (e->>'sender'))
                  END)) AS l(space, id)
     WHERE l.id IS NOT NULL
     ORDER BY l.space, l.id
  LOOP
    PERFORM pg_advisory_xact_lock(v_lock.space, v_lock.id);
  END LOOP;

  FOR v_event IN SELECT e.value, e.ordinality::int AS n
                   FROM jsonb_array_elements(p_events) WITH ORDINALITY AS e LOOP
    BEGIN
      RETURN QUERY SELECT v_event.n, r.*, NULL::text FROM ingest_batch_event(v_event.value) r;
    EXCEPTION WHEN OTHERS THEN
      RETURN QUERY SELECT v_event.n, 'failed', NULL::bigint, NULL::bigint, NULL::bigint,
                          NULL::text, false, SQLSTATE;
    END;
  END LOOP;
END
$$;


-- migrate:down
DROP FUNCTION ingest_events(jsonb);
DROP FUNCTION ingest_batch_event(jsonb);
DROP FUNCTION batch_apply_delete(jsonb);
DROP FUNCTION batch_apply_edit(jsonb);
DROP FUNCTION batch_row_of(text, text, text);
