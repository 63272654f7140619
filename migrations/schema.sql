-- The schema as migrations/ leaves it: every table, index and function as it runs.
-- Written by `npm run schema` (local/schema.ts) from a database migrated from scratch; do not
-- edit it by hand. npm test fails when it differs from what the migrations make.
-- Read a function here: a migration changes a function only by one whole CREATE OR REPLACE,
-- so the older migrations hold its earlier versions.
-- Newest migration: 20261204002001

-- Name: pg_trgm; Type: EXTENSION; Schema: -; Owner: -

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

-- Name: EXTENSION pg_trgm; Type: COMMENT; Schema: -; Owner: -

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';

-- Name: apply_deletion_to_row(text, text, text, timestamp with time zone, boolean); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.apply_deletion_to_row(p_channel text, p_message_key text, p_tenant text, p_at timestamp with time zone, p_restore boolean) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
  v_id       bigint;
  v_deleted  timestamptz;
  v_restored timestamptz;
BEGIN
  SELECT m.id, m.deleted_at, m.restored_at INTO v_id, v_deleted, v_restored
    FROM messages m JOIN conversations c ON c.id = m.conversation_id
   WHERE m.channel = p_channel AND m.channel_message_id = p_message_key
     AND EXISTS (SELECT 1 FROM customers cu WHERE cu.id = c.customer_id AND cu.tenant = p_tenant)
     FOR UPDATE OF m;
  IF NOT FOUND THEN RETURN NULL; END IF;
  IF p_restore THEN
    IF v_deleted IS NOT NULL AND v_deleted < p_at THEN
      UPDATE messages SET deleted_at = NULL, restored_at = p_at, updated_at = now()
       WHERE id = v_id;
      RETURN true;
    END IF;
    -- Not deleted (yet): remember it, so that an older delete arriving later cannot hide it.
    IF v_deleted IS NULL AND (v_restored IS NULL OR v_restored < p_at) THEN
      UPDATE messages SET restored_at = p_at WHERE id = v_id;
    END IF;
    RETURN false;
  END IF;
  -- A delete and an undelete of the same time: the delete stands, whichever came first.
  IF v_deleted IS NULL AND (v_restored IS NULL OR v_restored <= p_at) THEN
    UPDATE messages SET deleted_at = p_at, updated_at = now() WHERE id = v_id;
    RETURN true;
  END IF;
  -- Deleted already: keep the latest delete's time, so that an undelete between the two loses.
  IF v_deleted IS NOT NULL AND v_deleted < p_at THEN
    UPDATE messages SET deleted_at = p_at WHERE id = v_id;
  END IF;
  RETURN false;
END
$$;

-- Name: apply_message_deletion(text, text, text, timestamp with time zone, boolean, text); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.apply_message_deletion(p_channel text, p_message_key text, p_tenant text, p_at timestamp with time zone, p_restore boolean, p_delivery_key text) RETURNS TABLE(outcome text, message_id bigint, conversation_id bigint, customer_id bigint, payload_hash text, edited boolean)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
  v_changed boolean;
BEGIN
  v_changed := apply_deletion_to_row(p_channel, p_message_key, p_tenant, p_at, p_restore);
  IF v_changed IS NULL THEN
    PERFORM lock_message_key(p_channel, p_message_key);
    INSERT INTO message_tombstones AS t
           (channel, channel_message_id, deleted_at, restored_at, delivery_key)
    VALUES (p_channel, p_message_key, CASE WHEN NOT p_restore THEN p_at END,
            CASE WHEN p_restore THEN p_at END, p_delivery_key)
    ON CONFLICT (channel, channel_message_id) DO UPDATE
      SET deleted_at = CASE WHEN p_restore THEN t.deleted_at ELSE greatest(t.deleted_at, p_at) END,
          restored_at = CASE WHEN p_restore THEN greatest(t.restored_at, p_at) ELSE t.restored_at END;
    v_changed := apply_deletion_to_row(p_channel, p_message_key, p_tenant, p_at, p_restore);
    IF v_changed IS NULL THEN
      RETURN QUERY SELECT 'ignored', NULL::bigint, NULL::bigint, NULL::bigint, NULL::text, false;
      RETURN;
    END IF;
  END IF;
  RETURN QUERY SELECT CASE WHEN v_changed THEN 'updated' ELSE 'known' END, r.*
                 FROM batch_row_of(p_channel, p_message_key, p_tenant) r;
END
$$;

-- Name: apply_message_edit(text, text, text, text, timestamp with time zone, bigint, jsonb, text, text); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.apply_message_edit(p_channel text, p_message_key text, p_tenant text, p_body text, p_edited_at timestamp with time zone, p_edit_seq bigint, p_attachments jsonb, p_delivery_key text, p_payload_hash text) RETURNS TABLE(message_id bigint, conversation_id bigint, customer_id bigint, payload_hash text, edited boolean)
    LANGUAGE sql
    AS $$
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

-- Name: batch_apply_delete(jsonb); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.batch_apply_delete(e jsonb) RETURNS SETOF bigint
    LANGUAGE sql
    AS $$
  UPDATE messages m SET deleted_at = (e->>'occurredAt')::timestamptz, updated_at = now()
    FROM conversations c
   WHERE c.id = m.conversation_id AND m.channel = e->>'channel'
     AND m.channel_message_id = e->>'messageKey'
     AND EXISTS (SELECT 1 FROM customers cu WHERE cu.id = c.customer_id AND cu.tenant = e->>'tenant')
     AND m.deleted_at IS NULL
  RETURNING m.id
$$;

-- Name: batch_apply_edit(jsonb); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.batch_apply_edit(e jsonb) RETURNS SETOF bigint
    LANGUAGE sql
    AS $$
  SELECT a.message_id FROM apply_message_edit(
    e->>'channel', e->>'messageKey', e->>'tenant', e->>'body', (e->>'occurredAt')::timestamptz,
    (e->>'editSeq')::bigint,
    CASE WHEN jsonb_typeof(e->'attachments') = 'array' AND jsonb_array_length(e->'attachments') > 0
         THEN e->'attachments' END,
    e->>'deliveryKey', e->>'payloadHash') a
$$;

-- Name: batch_row_of(text, text, text); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.batch_row_of(p_channel text, p_key text, p_tenant text) RETURNS TABLE(message_id bigint, conversation_id bigint, customer_id bigint, payload_hash text, edited boolean)
    LANGUAGE sql STABLE
    AS $$
  SELECT m.id, m.conversation_id, c.customer_id, m.payload_hash, m.edited_at IS NOT NULL
    FROM messages m JOIN conversations c ON c.id = m.conversation_id
   WHERE m.channel = p_channel AND m.channel_message_id = p_key
     AND EXISTS (SELECT 1 FROM customers cu WHERE cu.id = c.customer_id AND cu.tenant = p_tenant)
$$;

-- Name: ingest_batch_event(jsonb); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.ingest_batch_event(e jsonb) RETURNS TABLE(outcome text, message_id bigint, conversation_id bigint, customer_id bigint, payload_hash text, edited boolean)
    LANGUAGE plpgsql
    AS $$
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

-- Name: ingest_events(jsonb); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.ingest_events(p_events jsonb) RETURNS TABLE(ord integer, outcome text, message_id bigint, conversation_id bigint, customer_id bigint, payload_hash text, edited boolean, sqlstate text)
    LANGUAGE plpgsql
    AS $$
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

-- Name: ingest_message(text, text, text, text, text, text, text, text, text, timestamp with time zone, timestamp with time zone, bigint, jsonb, text[]); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.ingest_message(p_channel text, p_tenant text, p_message_key text, p_sender text, p_display_name text, p_body text, p_subject text, p_payload_hash text, p_delivery_key text, p_occurred_at timestamp with time zone, p_edited_at timestamp with time zone, p_edit_seq bigint, p_attachments jsonb, p_references text[]) RETURNS TABLE(outcome text, message_id bigint, conversation_id bigint, customer_id bigint, payload_hash text, edited boolean)
    LANGUAGE plpgsql
    AS $$
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

-- Name: lock_message_key(text, text); Type: FUNCTION; Schema: public; Owner: -

CREATE FUNCTION public.lock_message_key(p_channel text, p_message_key text) RETURNS void
    LANGUAGE sql
    AS $$
  SELECT pg_advisory_xact_lock(13, hashtext(p_channel || ':' || p_message_key))
$$;

-- Name: channel_failures; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.channel_failures (
    id bigint NOT NULL,
    channel text NOT NULL,
    stage text NOT NULL,
    message_id bigint,
    outbox_id bigint,
    delivery_key text,
    event jsonb,
    error text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    next_attempt_at timestamp with time zone DEFAULT now() NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    source text,
    source_ref text,
    CONSTRAINT channel_failures_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'dead'::text, 'resolved'::text])))
);

-- Name: channel_failures_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.channel_failures ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.channel_failures_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: console_audit; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.console_audit (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    target text DEFAULT ''::text NOT NULL,
    result text DEFAULT ''::text NOT NULL
);

-- Name: console_audit_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.console_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.console_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: console_jobs; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.console_jobs (
    id bigint NOT NULL,
    kind text DEFAULT 'bulk_replay'::text NOT NULL,
    filter jsonb NOT NULL,
    actor text NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    total integer NOT NULL,
    done integer DEFAULT 0 NOT NULL,
    resolved integer DEFAULT 0 NOT NULL,
    failed integer DEFAULT 0 NOT NULL,
    cursor_id bigint DEFAULT 0 NOT NULL,
    cancel_requested boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT console_jobs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'done'::text, 'cancelled'::text, 'failed'::text])))
);

-- Name: console_jobs_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.console_jobs ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.console_jobs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: console_sessions; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.console_sessions (
    token_hash text NOT NULL,
    token_name text NOT NULL,
    token_digest text NOT NULL,
    role text NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    signed_in_with text DEFAULT 'token'::text NOT NULL,
    CONSTRAINT console_sessions_role_check CHECK ((role = ANY (ARRAY['viewer'::text, 'operator'::text]))),
    CONSTRAINT console_sessions_signed_in_with_check CHECK ((signed_in_with = ANY (ARRAY['token'::text, 'access'::text])))
);

-- Name: conversations; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.conversations (
    id bigint NOT NULL,
    customer_id bigint NOT NULL,
    channel text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    subject text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT conversations_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'open'::text, 'closed'::text])))
);

-- Name: conversations_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.conversations ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.conversations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: customers; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.customers (
    id bigint NOT NULL,
    channel text NOT NULL,
    tenant text NOT NULL,
    external_id text NOT NULL,
    display_name text,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: customers_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.customers ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.customers_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: gateway_decision_batches; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.gateway_decision_batches (
    id uuid NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: gateway_decision_keys; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.gateway_decision_keys (
    id bigint NOT NULL,
    delivery_key text NOT NULL,
    channel text NOT NULL,
    decision text NOT NULL,
    decided_by text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    payload_mismatch boolean DEFAULT false NOT NULL,
    stored_hash text,
    offered_hash text,
    ms integer DEFAULT 0 NOT NULL,
    decided_at timestamp with time zone NOT NULL
);

-- Name: gateway_decision_keys_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.gateway_decision_keys ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.gateway_decision_keys_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: gateway_decisions; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.gateway_decisions (
    bucket timestamp with time zone NOT NULL,
    channel text NOT NULL,
    decision text NOT NULL,
    decided_by text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    count bigint DEFAULT 0 NOT NULL,
    ms_le_5 bigint DEFAULT 0 NOT NULL,
    ms_le_20 bigint DEFAULT 0 NOT NULL,
    ms_le_50 bigint DEFAULT 0 NOT NULL,
    ms_le_200 bigint DEFAULT 0 NOT NULL,
    ms_le_1000 bigint DEFAULT 0 NOT NULL,
    ms_over bigint DEFAULT 0 NOT NULL
);

-- Name: gmail_sync_state; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.gmail_sync_state (
    mailbox text NOT NULL,
    history_id numeric(20,0),
    lease_owner text,
    lease_until timestamp with time zone,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT gmail_sync_state_history_id_check CHECK ((history_id >= (0)::numeric))
);

-- Name: idempotency_keys; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.idempotency_keys (
    tenant text NOT NULL,
    route text NOT NULL,
    key_hash text NOT NULL,
    fingerprint text NOT NULL,
    status smallint NOT NULL,
    body json NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL
);

-- Name: message_edits; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.message_edits (
    id bigint NOT NULL,
    message_id bigint NOT NULL,
    delivery_key text NOT NULL,
    edited_at timestamp with time zone NOT NULL,
    edit_seq bigint,
    body text NOT NULL,
    payload_hash text NOT NULL,
    applied boolean NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT message_edits_edit_seq_check CHECK ((edit_seq >= 0))
);

-- Name: message_edits_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.message_edits ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.message_edits_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: message_tombstones; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.message_tombstones (
    channel text NOT NULL,
    channel_message_id text NOT NULL,
    deleted_at timestamp with time zone,
    delivery_key text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    restored_at timestamp with time zone
);

-- Name: messages; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.messages (
    id bigint NOT NULL,
    conversation_id bigint NOT NULL,
    channel text NOT NULL,
    channel_message_id text,
    sender_external_id text NOT NULL,
    body text DEFAULT ''::text NOT NULL,
    subject text,
    payload_hash text NOT NULL,
    first_delivery_key text NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    edited_at timestamp with time zone,
    deleted_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    edit_seq bigint,
    attachments jsonb DEFAULT '[]'::jsonb NOT NULL,
    restored_at timestamp with time zone,
    CONSTRAINT messages_edit_seq_check CHECK ((edit_seq >= 0))
);

-- Name: messages_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.messages ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.messages_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: outbox; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.outbox (
    id bigint NOT NULL,
    message_id bigint NOT NULL,
    topic text NOT NULL,
    payload jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    processed_at timestamp with time zone,
    relay_lease_until timestamp with time zone
);

-- Name: outbox_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.outbox ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.outbox_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: payload_mismatches; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.payload_mismatches (
    id bigint NOT NULL,
    channel text NOT NULL,
    delivery_key text NOT NULL,
    message_key text,
    message_id bigint,
    stored_hash text,
    offered_hash text NOT NULL,
    seen_at timestamp with time zone DEFAULT now() NOT NULL
);

-- Name: payload_mismatches_id_seq; Type: SEQUENCE; Schema: public; Owner: -

ALTER TABLE public.payload_mismatches ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.payload_mismatches_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.schema_migrations (
    version character varying NOT NULL
);

-- Name: signature_bindings; Type: TABLE; Schema: public; Owner: -

CREATE TABLE public.signature_bindings (
    key text NOT NULL,
    body_hash text NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT signature_bindings_body_hash_check CHECK ((body_hash ~ '^[0-9a-f]{8,64}$'::text)),
    CONSTRAINT signature_bindings_key_check CHECK ((octet_length(key) <= 256))
);

-- Name: channel_failures channel_failures_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.channel_failures
    ADD CONSTRAINT channel_failures_pkey PRIMARY KEY (id);

-- Name: console_audit console_audit_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.console_audit
    ADD CONSTRAINT console_audit_pkey PRIMARY KEY (id);

-- Name: console_jobs console_jobs_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.console_jobs
    ADD CONSTRAINT console_jobs_pkey PRIMARY KEY (id);

-- Name: console_sessions console_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.console_sessions
    ADD CONSTRAINT console_sessions_pkey PRIMARY KEY (token_hash);

-- Name: conversations conversations_channel_name; Type: CHECK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE public.conversations
    ADD CONSTRAINT conversations_channel_name CHECK ((channel ~ '^[a-z][a-z0-9-]{0,31}$'::text)) NOT VALID;

-- Name: conversations conversations_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_pkey PRIMARY KEY (id);

-- Name: customers customers_channel_name; Type: CHECK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE public.customers
    ADD CONSTRAINT customers_channel_name CHECK ((channel ~ '^[a-z][a-z0-9-]{0,31}$'::text)) NOT VALID;

-- Name: customers customers_identity_key; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.customers
    ADD CONSTRAINT customers_identity_key UNIQUE (channel, tenant, external_id);

-- Name: customers customers_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.customers
    ADD CONSTRAINT customers_pkey PRIMARY KEY (id);

-- Name: gateway_decision_batches gateway_decision_batches_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.gateway_decision_batches
    ADD CONSTRAINT gateway_decision_batches_pkey PRIMARY KEY (id);

-- Name: gateway_decision_keys gateway_decision_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.gateway_decision_keys
    ADD CONSTRAINT gateway_decision_keys_pkey PRIMARY KEY (id);

-- Name: gateway_decisions gateway_decisions_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.gateway_decisions
    ADD CONSTRAINT gateway_decisions_pkey PRIMARY KEY (bucket, channel, decision, decided_by, reason);

-- Name: gmail_sync_state gmail_sync_state_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.gmail_sync_state
    ADD CONSTRAINT gmail_sync_state_pkey PRIMARY KEY (mailbox);

-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (tenant, route, key_hash);

-- Name: message_edits message_edits_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.message_edits
    ADD CONSTRAINT message_edits_pkey PRIMARY KEY (id);

-- Name: message_tombstones message_tombstones_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.message_tombstones
    ADD CONSTRAINT message_tombstones_pkey PRIMARY KEY (channel, channel_message_id);

-- Name: messages messages_attachments_is_array; Type: CHECK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE public.messages
    ADD CONSTRAINT messages_attachments_is_array CHECK ((jsonb_typeof(attachments) = 'array'::text)) NOT VALID;

-- Name: messages messages_channel_name; Type: CHECK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE public.messages
    ADD CONSTRAINT messages_channel_name CHECK ((channel ~ '^[a-z][a-z0-9-]{0,31}$'::text)) NOT VALID;

-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);

-- Name: outbox outbox_message_topic_key; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_message_topic_key UNIQUE (message_id, topic);

-- Name: outbox outbox_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_pkey PRIMARY KEY (id);

-- Name: payload_mismatches payload_mismatches_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.payload_mismatches
    ADD CONSTRAINT payload_mismatches_pkey PRIMARY KEY (id);

-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

-- Name: signature_bindings signature_bindings_pkey; Type: CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.signature_bindings
    ADD CONSTRAINT signature_bindings_pkey PRIMARY KEY (key);

-- Name: channel_failures_created_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX channel_failures_created_idx ON public.channel_failures USING btree (created_at DESC, id DESC);

-- Name: channel_failures_due_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX channel_failures_due_idx ON public.channel_failures USING btree (next_attempt_at) WHERE (status = 'pending'::text);

-- Name: channel_failures_inbound_key; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX channel_failures_inbound_key ON public.channel_failures USING btree (delivery_key) WHERE (stage = 'inbound'::text);

-- Name: channel_failures_key_suffix_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX channel_failures_key_suffix_idx ON public.channel_failures USING btree (reverse(delivery_key) text_pattern_ops);

-- Name: channel_failures_list_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX channel_failures_list_idx ON public.channel_failures USING btree (status, channel, stage, id DESC);

-- Name: channel_failures_message_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX channel_failures_message_idx ON public.channel_failures USING btree (message_id) WHERE (message_id IS NOT NULL);

-- Name: channel_failures_outbox_stage_key; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX channel_failures_outbox_stage_key ON public.channel_failures USING btree (outbox_id, stage) WHERE (outbox_id IS NOT NULL);

-- Name: channel_failures_status_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX channel_failures_status_idx ON public.channel_failures USING btree (status, id);

-- Name: console_audit_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX console_audit_at_idx ON public.console_audit USING btree (at DESC);

-- Name: console_sessions_expiry_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX console_sessions_expiry_idx ON public.console_sessions USING btree (expires_at);

-- Name: conversations_customer_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX conversations_customer_idx ON public.conversations USING btree (customer_id);

-- Name: conversations_one_pending_key; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX conversations_one_pending_key ON public.conversations USING btree (customer_id, channel) WHERE ((status = 'pending'::text) AND (channel <> 'email'::text));

-- Name: gateway_decision_batches_recorded_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX gateway_decision_batches_recorded_idx ON public.gateway_decision_batches USING btree (recorded_at);

-- Name: gateway_decision_keys_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX gateway_decision_keys_at_idx ON public.gateway_decision_keys USING btree (decided_at);

-- Name: gateway_decision_keys_key_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX gateway_decision_keys_key_idx ON public.gateway_decision_keys USING btree (delivery_key, decided_at);

-- Name: gateway_decision_keys_suffix_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX gateway_decision_keys_suffix_idx ON public.gateway_decision_keys USING btree (reverse(delivery_key) text_pattern_ops);

-- Name: gateway_decisions_spooled_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX gateway_decisions_spooled_idx ON public.gateway_decisions USING btree (channel, bucket DESC) WHERE (decision = 'spooled'::text);

-- Name: idempotency_keys_expires_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX idempotency_keys_expires_idx ON public.idempotency_keys USING btree (expires_at);

-- Name: message_edits_edit_key; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX message_edits_edit_key ON public.message_edits USING btree (message_id, edited_at, edit_seq NULLS FIRST) NULLS NOT DISTINCT;

-- Name: messages_body_trgm_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX messages_body_trgm_idx ON public.messages USING gin (body public.gin_trgm_ops);

-- Name: messages_channel_message_key; Type: INDEX; Schema: public; Owner: -

CREATE UNIQUE INDEX messages_channel_message_key ON public.messages USING btree (channel, channel_message_id) WHERE (channel_message_id IS NOT NULL);

-- Name: messages_conversation_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX messages_conversation_idx ON public.messages USING btree (conversation_id, id);

-- Name: messages_created_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX messages_created_idx ON public.messages USING btree (created_at, id);

-- Name: messages_delivery_suffix_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX messages_delivery_suffix_idx ON public.messages USING btree (reverse(first_delivery_key) text_pattern_ops);

-- Name: messages_key_suffix_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX messages_key_suffix_idx ON public.messages USING btree (reverse(channel_message_id) text_pattern_ops);

-- Name: outbox_unprocessed_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX outbox_unprocessed_idx ON public.outbox USING btree (id) WHERE (processed_at IS NULL);

-- Name: payload_mismatches_seen_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX payload_mismatches_seen_idx ON public.payload_mismatches USING btree (seen_at DESC, id DESC);

-- Name: signature_bindings_expires_at_idx; Type: INDEX; Schema: public; Owner: -

CREATE INDEX signature_bindings_expires_at_idx ON public.signature_bindings USING btree (expires_at);

-- Name: channel_failures channel_failures_message_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.channel_failures
    ADD CONSTRAINT channel_failures_message_id_fkey FOREIGN KEY (message_id) REFERENCES public.messages(id);

-- Name: channel_failures channel_failures_outbox_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.channel_failures
    ADD CONSTRAINT channel_failures_outbox_id_fkey FOREIGN KEY (outbox_id) REFERENCES public.outbox(id);

-- Name: conversations conversations_customer_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.conversations
    ADD CONSTRAINT conversations_customer_id_fkey FOREIGN KEY (customer_id) REFERENCES public.customers(id);

-- Name: message_edits message_edits_message_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.message_edits
    ADD CONSTRAINT message_edits_message_id_fkey FOREIGN KEY (message_id) REFERENCES public.messages(id) ON DELETE CASCADE;

-- Name: messages messages_conversation_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_conversation_id_fkey FOREIGN KEY (conversation_id) REFERENCES public.conversations(id);

-- Name: outbox outbox_message_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -

ALTER TABLE ONLY public.outbox
    ADD CONSTRAINT outbox_message_id_fkey FOREIGN KEY (message_id) REFERENCES public.messages(id);
