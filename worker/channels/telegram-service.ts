/**
 * Telegram service messages: members joined, title changed, pinned, payments, forum topics...
 * Nobody wrote them, so they are recorded (a replay is a duplicate) and never a message row.
 * @module
 */
import { str } from './untrusted'

/**
 * Message fields that make it a service message (no one wrote it): the Bot API's list (see
 * docs vendor-protocols-2 §2.2). A message with text or a caption is never one.
 */
const SERVICE_FIELDS = [
  'new_chat_members',
  'left_chat_member',
  'new_chat_title',
  'new_chat_photo',
  'delete_chat_photo',
  'group_chat_created',
  'supergroup_chat_created',
  'channel_chat_created',
  'migrate_to_chat_id',
  'migrate_from_chat_id',
  'message_auto_delete_timer_changed',
  'pinned_message',
  'invoice',
  'successful_payment',
  'refunded_payment',
  'users_shared',
  'chat_shared',
  'gift',
  'unique_gift',
  'gift_upgrade_sent',
  'connected_website',
  'write_access_allowed',
  'passport_data',
  'proximity_alert_triggered',
  'boost_added',
  'chat_background_set',
  'checklist_tasks_done',
  'checklist_tasks_added',
  'forum_topic_created',
  'forum_topic_edited',
  'forum_topic_closed',
  'forum_topic_reopened',
  'general_forum_topic_hidden',
  'general_forum_topic_unhidden',
  'giveaway_created',
  'giveaway',
  'giveaway_winners',
  'giveaway_completed',
  'paid_message_price_changed',
  'direct_message_price_changed',
  'suggested_post_approved',
  'suggested_post_approval_failed',
  'suggested_post_declined',
  'suggested_post_paid',
  'suggested_post_refunded',
  'video_chat_scheduled',
  'video_chat_started',
  'video_chat_ended',
  'video_chat_participants_invited',
  'web_app_data',
  'chat_owner_left',
  'chat_owner_changed',
  'community_chat_added',
  'community_chat_joined',
  'community_chat_removed',
  'managed_bot_created',
  'poll_option_added',
  'poll_option_deleted',
] as const

export function isServiceMessage(message: Record<string, unknown>): boolean {
  if (str(message.text) !== null || str(message.caption) !== null) return false
  return SERVICE_FIELDS.some((field) => message[field] !== undefined)
}
