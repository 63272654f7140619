-- migrate:up
-- Telegram message keys are scoped by bot since several bots share a deployment:
-- "{chat.id}:{message_id}" becomes "{bot id}:{chat.id}:{message_id}". The bot id is the tenant of
-- the message's customer (that is what the gateway wrote there). Rewriting the old rows lets a
-- replay or an edit of a message stored before the upgrade find it under the new key instead of
-- making a second row. A row whose new key is already taken (the same message arrived again after
-- the Worker was upgraded, before this ran) keeps its old key: rewriting it would break the unique
-- index. Runs again harmlessly (new keys do not match the old pattern).
UPDATE messages m
   SET channel_message_id = cu.tenant || ':' || m.channel_message_id
  FROM conversations c
  JOIN customers cu ON cu.id = c.customer_id
 WHERE c.id = m.conversation_id
   AND m.channel = 'telegram'
   AND m.channel_message_id ~ '^-?[0-9]+:[0-9]+$'
   AND NOT EXISTS (
     SELECT 1 FROM messages n
      WHERE n.channel = 'telegram' AND n.channel_message_id = cu.tenant || ':' || m.channel_message_id
   );

-- migrate:down
-- Fails if two bots hold the same chat:message_id (the old key cannot tell them apart).
UPDATE messages
   SET channel_message_id = regexp_replace(channel_message_id, '^[0-9]+:(-?[0-9]+:[0-9]+)$', '\1')
 WHERE channel = 'telegram' AND channel_message_id ~ '^[0-9]+:-?[0-9]+:[0-9]+$';
