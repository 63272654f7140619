-- migrate:up
-- Every edit of a message, in order (issue 21: the console lookup shows a message's edits). The
-- `messages` row keeps only the text of the newest edit (edited_at, edit_seq); this table keeps
-- each edit the origin took, append-only, including one that arrived after a newer edit (vendors
-- do not order deliveries): it happened, so it is history, but it never changed the row
-- (`applied` is false).
--
-- One row per edit of a message: (message, edited_at, edit_seq) is the edit's identity, the very
-- comparison that decides whether an edit is newer than the row's (origin/store.ts applyEdit), so
-- a replay adds nothing whichever delivery brings it (the vendor's retry, the spool, a replay from
-- the failures table), and an edit the row cannot tell from one it has is not a second row either.
-- The delivery key is kept for audit; it is not the identity, because how a channel builds an
-- edit's delivery key differs (Slack's event_id, Meta's mid + num_edit, Teams' hash of time and
-- text). NULLS NOT DISTINCT: most channels send no sequence. The same index, edit_seq NULLS FIRST
-- as the row orders them (an edit with a sequence wins over one without), reads one message's
-- history in order.
--
-- The REFERENCES locks messages (SHARE ROW EXCLUSIVE, briefly): behind a long transaction on it,
-- give up after 2 s instead (npm run migrate retries; see ops/migrate.ts).
SET LOCAL lock_timeout = '2s';
CREATE TABLE message_edits (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  message_id   bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
  -- The edit's own delivery (Slack event_id, Telegram update, ...), for audit.
  delivery_key text NOT NULL,
  edited_at    timestamptz NOT NULL,
  edit_seq     bigint CHECK (edit_seq >= 0),
  -- The whole text the edit set, and the edit event's payload hash.
  body         text NOT NULL,
  payload_hash text NOT NULL,
  -- True when the edit became the row's text as it arrived (or created the row); false when a
  -- newer edit was there already.
  applied      boolean NOT NULL,
  recorded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX message_edits_edit_key
  ON message_edits (message_id, edited_at, edit_seq NULLS FIRST) NULLS NOT DISTINCT;

-- An edit of a known message, for single ingest (origin/store.ts applyEdit) and batches
-- (batch_apply_edit): applied if it is newer than the row's last edit (a later time; the same time
-- and a larger sequence, or a sequence where the row has none), its attachments, if any,
-- replacing the row's; and recorded in message_edits either way, in the same statement. Only the
-- tenant's row (origin/store.ts ofTenant). Answers the edited row, as ingest_message() answers;
-- nothing when the message is unknown, or the edit is a replay or older than the row's.
CREATE FUNCTION apply_message_edit(
  p_channel      text,
  p_message_key  text,
  p_tenant       text,
  p_body         text,
  p_edited_at    timestamptz,
  p_edit_seq     bigint,
  p_attachments  jsonb,
  p_delivery_key text,
  p_payload_hash text
) RETURNS TABLE (
  message_id      bigint,
  conversation_id bigint,
  customer_id     bigint,
  payload_hash    text,
  edited          boolean
) LANGUAGE sql AS $$
  WITH target AS (
    SELECT m.id, c.customer_id
      FROM messages m JOIN conversations c ON c.id = m.conversation_id
     WHERE m.channel = p_channel AND m.channel_message_id = p_message_key
       AND EXISTS (SELECT 1 FROM customers cu WHERE cu.id = c.customer_id AND cu.tenant = p_tenant)
  ), edited AS (
    -- A concurrent edit of the row makes this wait, then test the newer-than on its version.
    UPDATE messages m
       SET body = p_body, edited_at = p_edited_at, edit_seq = p_edit_seq, updated_at = now(),
           attachments = COALESCE(p_attachments, m.attachments)
      FROM target t
     WHERE m.id = t.id
       AND (m.edited_at IS NULL OR m.edited_at < p_edited_at
            OR (m.edited_at = p_edited_at AND p_edit_seq IS NOT NULL
                AND (m.edit_seq IS NULL OR m.edit_seq < p_edit_seq)))
    RETURNING m.id, m.conversation_id, t.customer_id, m.payload_hash
  ), recorded AS (
    INSERT INTO message_edits (message_id, delivery_key, edited_at, edit_seq, body, payload_hash,
                               applied)
    SELECT t.id, p_delivery_key, p_edited_at, p_edit_seq, p_body, p_payload_hash,
           EXISTS (SELECT FROM edited)
      FROM target t
    ON CONFLICT (message_id, edited_at, edit_seq) DO NOTHING
  )
  SELECT e.id, e.conversation_id, e.customer_id, e.payload_hash, true FROM edited e
$$;

-- The batch's edit (20261202006001) is now this same function.
CREATE OR REPLACE FUNCTION batch_apply_edit(e jsonb) RETURNS SETOF bigint
LANGUAGE sql AS $$
  SELECT a.message_id FROM apply_message_edit(
    e->>'channel', e->>'messageKey', e->>'tenant', e->>'body', (e->>'occurredAt')::timestamptz,
    (e->>'editSeq')::bigint,
    CASE WHEN jsonb_typeof(e->'attachments') = 'array' AND jsonb_array_length(e->'attachments') > 0
         THEN e->'attachments' END,
    e->>'deliveryKey', e->>'payloadHash') a
$$;

-- An edit of a message never seen is stored as the message, already edited (ingest_message(),
-- for single ingest and batches alike): its first history row goes with it, in the same
-- subtransaction (a lost race on the message key rolls both back). One statement added to the
-- function of 20261202000001, after the outbox insert; the down migration removes it.
DO $$
DECLARE
  v_old text := pg_get_functiondef('ingest_message(text, text, text, text, text, text, text,
    text, text, timestamptz, timestamptz, bigint, jsonb, text, text[])'::regprocedure);
  v_anchor text := E'    RETURNING outbox.message_id INTO v_message;\n';
  v_new text;
BEGIN
  v_new := replace(v_old, v_anchor, v_anchor
    || E'    IF p_edited_at IS NOT NULL THEN -- migration 20261202008001\n'
    || E'      INSERT INTO message_edits (message_id, delivery_key, edited_at, edit_seq, body,\n'
    || E'                                 payload_hash, applied)\n'
    || E'      VALUES (v_message, p_delivery_key, p_edited_at, p_edit_seq, p_body, p_payload_hash,\n'
    || E'              true);\n'
    || E'    END IF;\n');
  IF v_new = v_old THEN
    RAISE EXCEPTION 'ingest_message() is not the function of 20261202000001: nothing to patch';
  END IF;
  EXECUTE v_new;
END
$$;

-- migrate:down
DO $$
DECLARE
  v_old text := pg_get_functiondef('ingest_message(text, text, text, text, text, text, text,
    text, text, timestamptz, timestamptz, bigint, jsonb, text, text[])'::regprocedure);
BEGIN
  EXECUTE replace(v_old,
    E'    IF p_edited_at IS NOT NULL THEN -- migration 20261202008001\n'
    || E'      INSERT INTO message_edits (message_id, delivery_key, edited_at, edit_seq, body,\n'
    || E'                                 payload_hash, applied)\n'
    || E'      VALUES (v_message, p_delivery_key, p_edited_at, p_edit_seq, p_body, p_payload_hash,\n'
    || E'              true);\n'
    || E'    END IF;\n', '');
END
$$;

-- batch_apply_edit as 20261202006001 made it.
CREATE OR REPLACE FUNCTION batch_apply_edit(e jsonb) RETURNS SETOF bigint
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

DROP FUNCTION apply_message_edit(text, text, text, text, timestamptz, bigint, jsonb, text, text);
DROP TABLE message_edits;
