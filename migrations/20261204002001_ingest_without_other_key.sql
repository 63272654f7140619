-- migrate:up
-- ingest_message() without p_other_key: every email key holds its sender (email/keys.ts), so there
-- is no other form of a key to look up, and no version ever stored one (0.1.0 is the first). Its
-- parameters change, so the old signature is dropped (no overload lingers) and the function made
-- anew; ingest_batch_event(), which ingest_events() calls for each event of a batch, re-created
-- whole to call it. Both are otherwise as 20261203001001_message_undelete.sql made them.
-- plpgsql resolves a call when it runs, so the drop needs no order. An origin built before this
-- passes the old 15 arguments and fails until it is replaced: migrate and deploy the origin
-- together (no release ever ran such an origin).
SET LOCAL lock_timeout = '2s';
DROP FUNCTION ingest_message(text, text, text, text, text, text, text, text, text, timestamptz,
  timestamptz, bigint, jsonb, text, text[]);

CREATE FUNCTION ingest_message(
  p_channel      text,
  p_tenant       text,
  p_message_key  text,
  p_sender       text,
  p_display_name text,
  p_body         text,
  p_subject      text,
  p_payload_hash text,
  p_delivery_key text,
  p_occurred_at  timestamptz,
  -- An edit of a message never seen is stored as the message, already edited, with its sequence.
  p_edited_at    timestamptz,
  p_edit_seq     bigint,
  p_attachments  jsonb,
  -- Email only (NULL otherwise): the thread references, nearest first (origin/store.ts).
  p_references   text[]
) RETURNS TABLE (
  outcome         text,
  message_id      bigint,
  conversation_id bigint,
  customer_id     bigint,
  payload_hash    text,
  edited          boolean
) LANGUAGE plpgsql AS $$
-- The output columns share names with table columns (customer_id in ON CONFLICT, ...): in SQL
-- here a name always means the column.
#variable_conflict use_column
DECLARE
  v_customer     bigint;
  v_conversation bigint;
  v_message      bigint;
  v_constraint   text;
  v_deleted_at   timestamptz;
  v_restored_at  timestamptz;
BEGIN
  -- The cheap path first: most duplicates are plain replays of a committed message.
  RETURN QUERY
    SELECT 'known', m.id, m.conversation_id, c.customer_id, m.payload_hash, m.edited_at IS NOT NULL
      FROM messages m JOIN conversations c ON c.id = m.conversation_id
     WHERE m.channel = p_channel AND m.channel_message_id = p_message_key;
  IF FOUND THEN RETURN; END IF;

  PERFORM lock_message_key(p_channel, p_message_key); -- see migration 20261202000001

  -- A block with an EXCEPTION clause is a subtransaction: when another delivery wins the message
  -- key, everything written here (a new customer, a new conversation) is rolled back with it.
  BEGIN
    -- Two first messages from a new sender both reach customers_identity_key; the second waits
    -- for the first to commit. The display name is only written when it brings something new,
    -- so a known sender writes no tuple (and RETURNING then returns nothing: read the row).
    INSERT INTO customers AS cu (channel, tenant, external_id, display_name)
    VALUES (p_channel, p_tenant, p_sender, p_display_name)
    ON CONFLICT ON CONSTRAINT customers_identity_key DO UPDATE
      SET display_name = EXCLUDED.display_name
      WHERE EXCLUDED.display_name IS NOT NULL
        AND cu.display_name IS DISTINCT FROM EXCLUDED.display_name
    RETURNING cu.id INTO v_customer;
    IF v_customer IS NULL THEN
      SELECT cu.id INTO STRICT v_customer FROM customers cu
       WHERE cu.channel = p_channel AND cu.tenant = p_tenant AND cu.external_id = p_sender;
    END IF;

    IF p_channel = 'email' THEN
      -- A reply joins the conversation of the nearest message it names, of this same customer
      -- only; anything else opens a new conversation with the subject.
      IF cardinality(p_references) > 0 THEN
        SELECT m.conversation_id INTO v_conversation
          FROM messages m JOIN conversations c ON c.id = m.conversation_id
         WHERE m.channel = 'email' AND m.channel_message_id = ANY (p_references)
           AND c.customer_id = v_customer
         ORDER BY array_position(p_references, m.channel_message_id), m.id
         LIMIT 1;
      END IF;
      IF v_conversation IS NULL THEN
        INSERT INTO conversations (customer_id, channel, subject)
        VALUES (v_customer, 'email', p_subject)
        RETURNING id INTO v_conversation;
      END IF;
    ELSE
      -- The customer's one pending conversation (conversations_one_pending_key). A concurrent
      -- creator makes DO NOTHING return nothing; its row is committed by then, so read it.
      SELECT cv.id INTO v_conversation FROM conversations cv
       WHERE cv.customer_id = v_customer AND cv.channel = p_channel AND cv.status = 'pending';
      IF v_conversation IS NULL THEN
        INSERT INTO conversations (customer_id, channel)
        VALUES (v_customer, p_channel)
        ON CONFLICT (customer_id, channel) WHERE status = 'pending' AND channel <> 'email'
          DO NOTHING
        RETURNING id INTO v_conversation;
      END IF;
      IF v_conversation IS NULL THEN
        SELECT cv.id INTO STRICT v_conversation FROM conversations cv
         WHERE cv.customer_id = v_customer AND cv.channel = p_channel AND cv.status = 'pending';
      END IF;
    END IF;

    -- The message and its one outbox row (ids and the channel, never the body). A delete or an
    -- undelete that came first (a tombstone) sets its deletion state: deleted when the latest
    -- delete is later than the latest undelete. No ON CONFLICT: another delivery holding the key
    -- is the unique violation below.
    SELECT CASE WHEN t.deleted_at >= coalesce(t.restored_at, '-infinity') THEN t.deleted_at END,
           t.restored_at
      INTO v_deleted_at, v_restored_at
      FROM message_tombstones t
     WHERE t.channel = p_channel AND t.channel_message_id = p_message_key;
    WITH inserted AS (
      INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id,
                            body, subject, payload_hash, first_delivery_key, occurred_at,
                            edited_at, edit_seq, attachments, deleted_at, restored_at)
      VALUES (v_conversation, p_channel, p_message_key, p_sender, p_body, p_subject,
              p_payload_hash, p_delivery_key, p_occurred_at, p_edited_at, p_edit_seq,
              p_attachments, v_deleted_at, v_restored_at)
      RETURNING id
    )
    INSERT INTO outbox (message_id, topic, payload)
    SELECT i.id, 'message.created', jsonb_build_object(
             'messageId', i.id::text, 'conversationId', v_conversation::text,
             'customerId', v_customer::text, 'channel', p_channel)
      FROM inserted i
    RETURNING outbox.message_id INTO v_message;
    IF p_edited_at IS NOT NULL THEN -- migration 20261202008001
      INSERT INTO message_edits (message_id, delivery_key, edited_at, edit_seq, body,
                                 payload_hash, applied)
      VALUES (v_message, p_delivery_key, p_edited_at, p_edit_seq, p_body, p_payload_hash,
              true);
    END IF;
  EXCEPTION WHEN unique_violation THEN
    -- 23505 on the message key = someone else won (their row is committed: the insert waited
    -- for it). Any other unique violation is a bug and stays an error.
    GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
    IF v_constraint IS DISTINCT FROM 'messages_channel_message_key' THEN RAISE; END IF;
    RETURN QUERY
      SELECT 'known', m.id, m.conversation_id, c.customer_id, m.payload_hash,
             m.edited_at IS NOT NULL
        FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE m.channel = p_channel AND m.channel_message_id = p_message_key;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'message key conflicted but no winner row was found';
    END IF;
    RETURN;
  END;

  RETURN QUERY SELECT 'created', v_message, v_conversation, v_customer, p_payload_hash, p_edited_at IS NOT NULL;
END
$$;

CREATE OR REPLACE FUNCTION ingest_batch_event(e jsonb) RETURNS TABLE (
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

  IF e->>'kind' IN ('delete', 'undelete') THEN
    -- ingestDeletion: one function for single ingest and batches (the batch holds the key lock).
    RETURN QUERY SELECT d.* FROM apply_message_deletion(
      v_channel, v_key, v_tenant, (e->>'occurredAt')::timestamptz, e->>'kind' = 'undelete',
      e->>'deliveryKey') d;
    RETURN;
  END IF;

  -- A new message, or an edit of a message never seen: stored edited, with its sequence.
  SELECT * INTO STRICT v_new FROM ingest_message(
    v_channel, v_tenant, v_key, e->>'sender', e->>'displayName', e->>'body', e->>'subject',
    e->>'payloadHash', e->>'deliveryKey', (e->>'occurredAt')::timestamptz,
    CASE WHEN v_edit THEN (e->>'occurredAt')::timestamptz END,
    CASE WHEN v_edit THEN (e->>'editSeq')::bigint END,
    COALESCE(CASE WHEN jsonb_typeof(e->'attachments') = 'array' THEN e->'attachments' END, '[]'),
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

-- migrate:down
-- ingest_message() and ingest_batch_event() as 20261203001001_message_undelete.sql made them.
SET LOCAL lock_timeout = '2s';
DROP FUNCTION ingest_message(text, text, text, text, text, text, text, text, text, timestamptz,
  timestamptz, bigint, jsonb, text[]);

CREATE FUNCTION ingest_message(
  p_channel      text,
  p_tenant       text,
  p_message_key  text,
  p_sender       text,
  p_display_name text,
  p_body         text,
  p_subject      text,
  p_payload_hash text,
  p_delivery_key text,
  p_occurred_at  timestamptz,
  -- An edit of a message never seen is stored as the message, already edited, with its sequence.
  p_edited_at    timestamptz,
  p_edit_seq     bigint,
  p_attachments  jsonb,
  -- Email only (NULL otherwise): the other form of the key, and the thread references (each with
  -- its other form), nearest first. origin/store.ts computes both.
  p_other_key    text,
  p_references   text[]
) RETURNS TABLE (
  outcome         text,
  message_id      bigint,
  conversation_id bigint,
  customer_id     bigint,
  payload_hash    text,
  edited          boolean
) LANGUAGE plpgsql AS $$
-- The output columns share names with table columns (customer_id in ON CONFLICT, ...): in SQL
-- here a name always means the column.
#variable_conflict use_column
DECLARE
  v_customer     bigint;
  v_conversation bigint;
  v_message      bigint;
  v_constraint   text;
  v_deleted_at   timestamptz;
  v_restored_at  timestamptz;
BEGIN
  -- The cheap path first: most duplicates are plain replays of a committed message.
  RETURN QUERY
    SELECT 'known', m.id, m.conversation_id, c.customer_id, m.payload_hash, m.edited_at IS NOT NULL
      FROM messages m JOIN conversations c ON c.id = m.conversation_id
     WHERE m.channel = p_channel AND m.channel_message_id = p_message_key;
  IF FOUND THEN RETURN; END IF;

  -- A mail stored before the sender was part of email keys (or by a Worker still on the old
  -- code) is this one if the same sender sent it; another sender's row under that key is not.
  IF p_other_key IS NOT NULL THEN
    RETURN QUERY
      SELECT 'other_form', m.id, m.conversation_id, c.customer_id, m.payload_hash,
             m.edited_at IS NOT NULL
        FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE m.channel = 'email' AND m.channel_message_id = p_other_key
         AND m.sender_external_id = p_sender;
    IF FOUND THEN RETURN; END IF;
  END IF;

  PERFORM lock_message_key(p_channel, p_message_key); -- see migration 20261202000001

  -- A block with an EXCEPTION clause is a subtransaction: when another delivery wins the message
  -- key, everything written here (a new customer, a new conversation) is rolled back with it.
  BEGIN
    -- Two first messages from a new sender both reach customers_identity_key; the second waits
    -- for the first to commit. The display name is only written when it brings something new,
    -- so a known sender writes no tuple (and RETURNING then returns nothing: read the row).
    INSERT INTO customers AS cu (channel, tenant, external_id, display_name)
    VALUES (p_channel, p_tenant, p_sender, p_display_name)
    ON CONFLICT ON CONSTRAINT customers_identity_key DO UPDATE
      SET display_name = EXCLUDED.display_name
      WHERE EXCLUDED.display_name IS NOT NULL
        AND cu.display_name IS DISTINCT FROM EXCLUDED.display_name
    RETURNING cu.id INTO v_customer;
    IF v_customer IS NULL THEN
      SELECT cu.id INTO STRICT v_customer FROM customers cu
       WHERE cu.channel = p_channel AND cu.tenant = p_tenant AND cu.external_id = p_sender;
    END IF;

    IF p_channel = 'email' THEN
      -- A reply joins the conversation of the nearest message it names, of this same customer
      -- only; anything else opens a new conversation with the subject.
      IF cardinality(p_references) > 0 THEN
        SELECT m.conversation_id INTO v_conversation
          FROM messages m JOIN conversations c ON c.id = m.conversation_id
         WHERE m.channel = 'email' AND m.channel_message_id = ANY (p_references)
           AND c.customer_id = v_customer
         ORDER BY array_position(p_references, m.channel_message_id), m.id
         LIMIT 1;
      END IF;
      IF v_conversation IS NULL THEN
        INSERT INTO conversations (customer_id, channel, subject)
        VALUES (v_customer, 'email', p_subject)
        RETURNING id INTO v_conversation;
      END IF;
    ELSE
      -- The customer's one pending conversation (conversations_one_pending_key). A concurrent
      -- creator makes DO NOTHING return nothing; its row is committed by then, so read it.
      SELECT cv.id INTO v_conversation FROM conversations cv
       WHERE cv.customer_id = v_customer AND cv.channel = p_channel AND cv.status = 'pending';
      IF v_conversation IS NULL THEN
        INSERT INTO conversations (customer_id, channel)
        VALUES (v_customer, p_channel)
        ON CONFLICT (customer_id, channel) WHERE status = 'pending' AND channel <> 'email'
          DO NOTHING
        RETURNING id INTO v_conversation;
      END IF;
      IF v_conversation IS NULL THEN
        SELECT cv.id INTO STRICT v_conversation FROM conversations cv
         WHERE cv.customer_id = v_customer AND cv.channel = p_channel AND cv.status = 'pending';
      END IF;
    END IF;

    -- The message and its one outbox row (ids and the channel, never the body). A delete or an
    -- undelete that came first (a tombstone) sets its deletion state: deleted when the latest
    -- delete is later than the latest undelete. No ON CONFLICT: another delivery holding the key
    -- is the unique violation below.
    SELECT CASE WHEN t.deleted_at >= coalesce(t.restored_at, '-infinity') THEN t.deleted_at END,
           t.restored_at
      INTO v_deleted_at, v_restored_at
      FROM message_tombstones t
     WHERE t.channel = p_channel AND t.channel_message_id = p_message_key;
    WITH inserted AS (
      INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id,
                            body, subject, payload_hash, first_delivery_key, occurred_at,
                            edited_at, edit_seq, attachments, deleted_at, restored_at)
      VALUES (v_conversation, p_channel, p_message_key, p_sender, p_body, p_subject,
              p_payload_hash, p_delivery_key, p_occurred_at, p_edited_at, p_edit_seq,
              p_attachments, v_deleted_at, v_restored_at)
      RETURNING id
    )
    INSERT INTO outbox (message_id, topic, payload)
    SELECT i.id, 'message.created', jsonb_build_object(
             'messageId', i.id::text, 'conversationId', v_conversation::text,
             'customerId', v_customer::text, 'channel', p_channel)
      FROM inserted i
    RETURNING outbox.message_id INTO v_message;
    IF p_edited_at IS NOT NULL THEN -- migration 20261202008001
      INSERT INTO message_edits (message_id, delivery_key, edited_at, edit_seq, body,
                                 payload_hash, applied)
      VALUES (v_message, p_delivery_key, p_edited_at, p_edit_seq, p_body, p_payload_hash,
              true);
    END IF;
  EXCEPTION WHEN unique_violation THEN
    -- 23505 on the message key = someone else won (their row is committed: the insert waited
    -- for it). Any other unique violation is a bug and stays an error.
    GET STACKED DIAGNOSTICS v_constraint = CONSTRAINT_NAME;
    IF v_constraint IS DISTINCT FROM 'messages_channel_message_key' THEN RAISE; END IF;
    RETURN QUERY
      SELECT 'known', m.id, m.conversation_id, c.customer_id, m.payload_hash,
             m.edited_at IS NOT NULL
        FROM messages m JOIN conversations c ON c.id = m.conversation_id
       WHERE m.channel = p_channel AND m.channel_message_id = p_message_key;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'message key conflicted but no winner row was found';
    END IF;
    RETURN;
  END;

  RETURN QUERY SELECT 'created', v_message, v_conversation, v_customer, p_payload_hash, p_edited_at IS NOT NULL;
END
$$;

CREATE OR REPLACE FUNCTION ingest_batch_event(e jsonb) RETURNS TABLE (
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

  IF e->>'kind' IN ('delete', 'undelete') THEN
    -- ingestDeletion: one function for single ingest and batches (the batch holds the key lock).
    RETURN QUERY SELECT d.* FROM apply_message_deletion(
      v_channel, v_key, v_tenant, (e->>'occurredAt')::timestamptz, e->>'kind' = 'undelete',
      e->>'deliveryKey') d;
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
