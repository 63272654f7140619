-- migrate:up
-- A delete racing its message's first insert was lost: the delete found no row, wrote its
-- tombstone and looked once more, while the insert, whose snapshot predated the tombstone, had
-- not committed yet; neither saw the other. Both now hold the message key's lock: the delete
-- path (origin/ingest.ts) around its tombstone and second look, in one transaction;
-- ingest_message() from just before it writes anything until it commits. The one that waits
-- runs its next statement with a new snapshot (READ COMMITTED), so it sees what the other
-- committed: the insert reads the tombstone, or the delete's second look finds the row.
--
-- The lock is transaction-level (released at commit or rollback, never left behind by a dropped
-- connection) and keyed by a 32-bit hash of (channel, message key): unrelated keys do not wait for
-- each other; two keys whose hashes collide only wait for each other's short transaction. Both
-- sides take it before any row lock, so it adds no lock-order deadlock. The first key of the
-- two-key form (13, as in ADR-013) keeps it apart from any other advisory lock of the database.
--
-- Edits need no lock: an edit of a message not stored yet inserts the message itself, so a
-- racing original meets it on the unique index and the edit's second UPDATE finds the row
-- (ingestEdit). An edit-created message takes the lock like any insert.
--
-- ingest_message() below is the previous version (20261201000007_ingest_function.sql) with one
-- line added, the PERFORM before the subtransaction; the down migration removes that line.
CREATE FUNCTION lock_message_key(p_channel text, p_message_key text) RETURNS void
LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(13, hashtext(p_channel || ':' || p_message_key))
$$;

CREATE OR REPLACE FUNCTION ingest_message(
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

    -- The message and its one outbox row (ids and the channel, never the body). A delete that
    -- came first (a tombstone) stores it deleted. No ON CONFLICT: another delivery holding the
    -- key is the unique violation below.
    WITH inserted AS (
      INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id,
                            body, subject, payload_hash, first_delivery_key, occurred_at,
                            edited_at, edit_seq, attachments, deleted_at)
      VALUES (v_conversation, p_channel, p_message_key, p_sender, p_body, p_subject,
              p_payload_hash, p_delivery_key, p_occurred_at, p_edited_at, p_edit_seq,
              p_attachments,
              (SELECT t.deleted_at FROM message_tombstones t
                WHERE t.channel = p_channel AND t.channel_message_id = p_message_key))
      RETURNING id
    )
    INSERT INTO outbox (message_id, topic, payload)
    SELECT i.id, 'message.created', jsonb_build_object(
             'messageId', i.id::text, 'conversationId', v_conversation::text,
             'customerId', v_customer::text, 'channel', p_channel)
      FROM inserted i
    RETURNING outbox.message_id INTO v_message;
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


-- migrate:down
DO $$
BEGIN
  EXECUTE replace(
    pg_get_functiondef('ingest_message(text, text, text, text, text, text, text, text, text,
      timestamptz, timestamptz, bigint, jsonb, text, text[])'::regprocedure),
    E'  PERFORM lock_message_key(p_channel, p_message_key); -- see migration 20261202000001\n\n',
    '');
END
$$;
DROP FUNCTION lock_message_key(text, text);
