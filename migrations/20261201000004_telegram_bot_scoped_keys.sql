-- migrate:up transaction:false
-- Telegram message keys are scoped by bot since several bots share a deployment:
-- "{chat.id}:{message_id}" becomes "{bot id}:{chat.id}:{message_id}". The bot id is the tenant of
-- the message's customer (that is what the gateway wrote there). Rewriting the old rows lets a
-- replay or an edit of a message stored before the upgrade find it under the new key instead of
-- making a second row. A row whose new key is already taken (the same message arrived again after
-- the Worker was upgraded, before this ran) keeps its old key: rewriting it would break the unique
-- index. Runs again harmlessly (new keys do not match the old pattern).
--
-- In batches of 5,000 rows, each committed on its own (outside a transaction, hence one DO
-- statement alone in this file): a live database's edits and deletes of those rows wait for one
-- batch's row locks at most, never for the whole table's.
DO $$
DECLARE
  changed integer;
BEGIN
  LOOP
    UPDATE messages m
       SET channel_message_id = cu.tenant || ':' || m.channel_message_id
      FROM conversations c
      JOIN customers cu ON cu.id = c.customer_id
     WHERE c.id = m.conversation_id
       AND m.id IN (
         SELECT o.id FROM messages o
           JOIN conversations oc ON oc.id = o.conversation_id
           JOIN customers ocu ON ocu.id = oc.customer_id
          WHERE o.channel = 'telegram'
            AND o.channel_message_id ~ '^-?[0-9]+:[0-9]+$'
            AND NOT EXISTS (
              SELECT 1 FROM messages n
               WHERE n.channel = 'telegram'
                 AND n.channel_message_id = ocu.tenant || ':' || o.channel_message_id
            )
          LIMIT 5000
       );
    GET DIAGNOSTICS changed = ROW_COUNT;
    EXIT WHEN changed = 0;
    COMMIT;
  END LOOP;
END
$$;

-- migrate:down transaction:false
-- Fails if two bots hold the same chat:message_id (the old key cannot tell them apart).
UPDATE messages
   SET channel_message_id = regexp_replace(channel_message_id, '^[0-9]+:(-?[0-9]+:[0-9]+)$', '\1')
 WHERE channel = 'telegram' AND channel_message_id ~ '^[0-9]+:-?[0-9]+:[0-9]+$';
