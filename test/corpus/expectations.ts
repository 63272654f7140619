/**
 * What every payload of the shared corpus (shared/corpus/, sources in its SOURCES.md) must leave
 * in Postgres when delivered once under fresh ids (test/corpus/corpus.test.ts); a replay, or
 * concurrent copies, must leave exactly the same.
 *
 * - `row`: one new message row (`body` is contained in its text, or is it when '': the text is
 *   empty; `attachments` its count).
 * - `edit`: one row stored as edited (an edit whose original was never seen is stored as the
 *   message, already edited).
 * - `delete`: no row, one tombstone (a delete whose message was never seen: remembered, so that
 *   the message, should it land later, is stored deleted).
 * - `nothing`: acknowledged (200, or the email accepted), nothing written; with `rejected`, the
 *   email is bounced instead.
 * - `kept`: acknowledged, no row: a dead letter `unrecognized_event` (one `channel_failures` row)
 *   holds it whole, for a replay once the code knows it.
 * @module
 */

export interface Expectation {
  expect: 'row' | 'edit' | 'delete' | 'nothing' | 'kept'
  /** Contained in the row's body ('' where the body must be empty). */
  body?: string
  attachments?: number
  /** The row's sender_external_id. */
  sender?: string
  /** The mail is refused (a bounce: its sender learns it was not taken). */
  rejected?: true
  /** Why, where it is not plain from the file's name. */
  why?: string
}

const row = (body: string, attachments = 0, why?: string): Expectation => ({
  expect: 'row',
  body,
  attachments,
  ...(why ? { why } : {}),
})
const nothing = (why: string): Expectation => ({ expect: 'nothing', why })
const kept = (why: string): Expectation => ({ expect: 'kept', why })

export const CORPUS: Record<string, Expectation> = {
  // Slack: Events API bodies.
  'slack/app-mention.json': row('for an honorable mention', 0, 'the mention is the message'),
  'slack/app-rate-limited.json': nothing('Slack telling the app it is rate limited'),
  'slack/bot-id-in-thread.json': nothing('a bot (bot_id): never a customer'),
  'slack/bot-message-subtype.json': nothing('subtype bot_message'),
  'slack/channel-join.json': nothing('subtype channel_join: a system notice'),
  'slack/email-app-file-share.json': nothing("the Email app's post: Slackbot with a bot_id"),
  'slack/file-share-slack-connect.json': row('message message message', 1),
  'slack/file-share.json': row('message message message', 1),
  'slack/forwarded-message.json': row(
    'Forwarded message from lev:\n> 123',
    0,
    'a forward without text of its own: the shared message (attachments[].is_share) is quoted',
  ),
  'slack/me-message.json': row('is doing that thing'),
  'slack/message-changed.json': {
    expect: 'edit',
    body: '<https://jadeapptesting.slack.com/archives/C043YJGBY49/p1663966292304369>',
    attachments: 0,
  },
  'slack/message-channel.json': row('dgsfklsdgf'),
  'slack/message-deleted.json': { expect: 'delete' },
  'slack/message-im.json': { ...row('test'), sender: 'U043H11ES4V' },
  'slack/message-replied.json': nothing('message_replied: a thread notice, the reply comes alone'),
  'slack/message-rich-text.json': row('text text text'),
  'slack/reaction-added-no-event-id.json': nothing('a reaction is not a message'),
  'slack/share-with-message.json': row(
    'hello check that out!\n\nForwarded message from lev:\n> this will be shared with a message',
    0,
    'its own text, then the shared message quoted',
  ),
  'slack/slackbot-im.json': nothing('Slackbot (USLACKBOT, no bot_id): a workspace notice'),
  'slack/thread-broadcast.json': row('broadcasting this reply'),
  'slack/url-verification.json': nothing('the URL handshake: answered with the challenge'),

  // Telegram: Update objects (`msg-*`: Message objects, sent as an update's `message`).
  'telegram/audio-caption.json': row('New Amharic song', 1),
  'telegram/callback-query.json': row('My Inline Keyboard', 0, "a button press: the button's text"),
  'telegram/channel-post.json': row('uuuuuu'),
  'telegram/contact-reply.json': row('', 1, 'the contact card is its attachment'),
  'telegram/document-png.json': row('', 1),
  'telegram/edited-channel-post.json': { expect: 'edit', body: 'hello, boter #Edited' },
  'telegram/edited-message.json': { expect: 'edit', body: 'new message haha, #Edited' },
  'telegram/inline-query.json': nothing('an inline query, not a message'),
  'telegram/message-text.json': row('new message haha'),
  'telegram/msg-anonymous-admin-forward.json': row('text'),
  'telegram/msg-empty.json': kept(
    'a message of a kind the Bot API does not describe: no empty row',
  ),
  'telegram/msg-forum-topic-closed.json': nothing('a service message'),
  'telegram/msg-forum-topic-created.json': nothing('a service message'),
  'telegram/msg-forum-topic-reply.json': row('blah'),
  'telegram/msg-forward-origin-user.json': row('test'),
  'telegram/msg-location.json': row('', 1),
  'telegram/msg-media-group-video.json': row('', 1),
  'telegram/msg-migrate-from-chat.json': nothing('a service message'),
  'telegram/msg-migrate-to-chat.json': nothing('a service message'),
  'telegram/msg-photo-caption.json': row('www.example.com', 1),
  'telegram/msg-photo-no-caption.json': row('', 1),
  'telegram/msg-poll.json': row(
    'Poll: Test poll 1\n- Answer 1\n- Answer 2',
    0,
    'a poll: its question, then one option a line',
  ),
  'telegram/msg-sticker-animated.json': row('', 1),
  'telegram/msg-text-cyrillic-emoji.json': row('Лол кек 😂'),
  'telegram/msg-venue.json': row('', 1, 'the venue is its location attachment'),
  'telegram/msg-video-chat-started.json': nothing('a service message'),
  'telegram/msg-video-forwarded.json': row('', 1),
  'telegram/start-command.json': row('/start'),
  'telegram/update-chat-boost.json': nothing('a boost, not a message'),
  'telegram/update-dice.json': row('🎲 2', 0, 'a dice throw: its emoji and value'),
  'telegram/update-message-reaction-anonymous.json': nothing('a reaction'),
  'telegram/update-message-reaction-count.json': nothing('a reaction count'),
  'telegram/update-message-reaction-user.json': nothing('a reaction'),
  'telegram/update-my-chat-member-kicked.json': nothing("the bot's own membership"),
  'telegram/update-pinned-message.json': nothing('a service message'),
  'telegram/update-removed-chat-boost.json': nothing('a boost, not a message'),
  'telegram/update-reply-bot-command.json': row('/report'),
  'telegram/update-story.json': row(
    'Story from TON Spin (@TONSpinChannel)',
    0,
    'a shared story, written out',
  ),
  'telegram/update-text-link-preview.json': row('hello there'),
  'telegram/update-text-private.json': row('4'),
  'telegram/voice.json': row('', 1),

  // Twilio: form bodies (Programmable Messaging, SMS and WhatsApp).
  'twilio/mms-plugin-webhook.form': row('This is MMS type sample', 1),
  'twilio/sms-plugin-webhook.form': row('Ahoy'),
  'twilio/sms-quebec-twilio-rails.form': row('Hello!'),
  'twilio/sms-status-delivered-twilio-rails.form': nothing('a status callback'),
  'twilio/wa-button-call-permission.form': row('VOICE_CALL_REQUEST', 0, "the customer's tap"),
  'twilio/wa-image-media-only.form': row('', 1),
  'twilio/wa-location.form': row('', 1),
  'twilio/wa-status-delivered.form': nothing('a status callback'),
  'twilio/wa-status-sent.form': nothing('a status callback'),
  'twilio/wa-text.form': row('test'),

  // WhatsApp Cloud API (Meta): webhook bodies.
  'whatsapp-cloud/account-update-banned.json': nothing('field account_update, not messages'),
  'whatsapp-cloud/audio-voice.json': row('', 1),
  'whatsapp-cloud/button-template-reply.json': row('No'),
  'whatsapp-cloud/contacts.json': row('', 1),
  'whatsapp-cloud/document-caption.json': row('RESTFB ANNIVERSARY', 1),
  'whatsapp-cloud/image-caption.json': row('Some awesome image', 1),
  'whatsapp-cloud/interactive-button-reply.json': row('button-text'),
  'whatsapp-cloud/interactive-list-reply.json': row('list_reply_title'),
  'whatsapp-cloud/location.json': row('', 1),
  'whatsapp-cloud/reaction.json': nothing('a reaction'),
  'whatsapp-cloud/status-failed-errors.json': nothing('a status: recorded, never a row'),
  'whatsapp-cloud/status-sent-pricing.json': nothing('a status: recorded, never a row'),
  'whatsapp-cloud/sticker.json': row('', 1),
  'whatsapp-cloud/system-user-changed-number.json': nothing('a system notice'),
  'whatsapp-cloud/text-bsuid-username-group.json': {
    ...row('Does it come in another color?', 0, 'no `from`: its business-scoped user id is'),
    sender: 'US.13491208655302741918',
  },
  'whatsapp-cloud/text-click-to-whatsapp-ad.json': row('Test'),
  'whatsapp-cloud/text-meta-docs-compact.json': {
    ...row('Does it come in another color?'),
    sender: '16505551234',
  },
  'whatsapp-cloud/text.json': row('Test'),
  'whatsapp-cloud/unknown-type-error.json': kept(
    'a customer message of a type unknown to Meta (error 131051)',
  ),
  'whatsapp-cloud/unsupported.json': kept(
    'a customer message of a type the Cloud API does not carry',
  ),
  'whatsapp-cloud/video-caption.json': row('Video', 1),

  // LINE: line/line-bot-sdk-python and line-bot-sdk-nodejs webhook test data.
  'line/file.json': row('', 1),
  'line/follow.json': nothing('a follow'),
  'line/group-text.json': row('Hello, world'),
  'line/location.json': row('', 1),
  'line/member-joined.json': nothing('members joined a group'),
  'line/message-edited.json': {
    expect: 'edit',
    body: 'Hello, edited world',
    why: 'messageEdited: an edit of its message (never seen: stored as the message, edited)',
  },
  'line/node-message-edited-group.json': { expect: 'edit', body: 'hello edited' },
  'line/postback-datetime.json': row(
    'action=buyItem&itemId=123123&color=red\n2017-12-25T01:00',
    0,
    'a button press: its data and the picked time',
  ),
  'line/room-image-no-user-id.json': {
    ...row('', 1, 'no source.userId: the room is the sender'),
    sender: 'room:Ra8dbf4673c4c812cd491258042226c99',
  },
  'line/sticker.json': row('Just sticker', 1, 'a message sticker: the text typed on it'),
  'line/undefined-event.json': kept('an event type no SDK knows yet'),
  'line/unsend.json': { expect: 'delete' },
  'line/video-play-complete.json': nothing('a user finished watching a video the bot sent'),

  // Messenger and Instagram: nyaruka/courier's captured payloads, Meta's reference examples.
  'messenger/courier-dlr.json': nothing('a delivery: recorded'),
  'messenger/courier-echo.json': nothing("the Page's own message"),
  'messenger/courier-fallback.json': row('', 1, 'a fallback: a document of its URL and title'),
  'messenger/courier-hello-msg.json': row('Hello World'),
  'messenger/courier-mid-dollar.json': row('65863634', 0, 'a mid.$cAA… id'),
  'messenger/courier-postback-get-started.json': row(
    'postback title',
    0,
    'a button press: its title',
  ),
  'messenger/courier-postback.json': row('postback title', 0, 'a button press: its title'),
  'messenger/courier-reel.json': row('', 1, 'a reel: a video of its URL'),
  'messenger/courier-unknown-messaging-entry.json': kept('an event of no kind this code knows'),
  'messenger/meta-docs-message-edit.json': { expect: 'edit', body: '<TEXT>' },
  'messenger/meta-docs-postback-m-colon.json': {
    ...row('TITLE-FOR-THE-CTA', 0, 'a postback with an m_…:… mid; the chat plugin sender'),
    sender: 'USER-REF-ID',
  },
  'messenger/meta-docs-text-mid-colon.json': row('hello, world!', 0, 'a mid.<ms>:<hex> id'),
  'instagram/courier-echo.json': nothing("the account's own message"),
  'instagram/courier-icebreaker-get-started.json': row(
    'icebreaker question',
    0,
    'an icebreaker: a button press',
  ),
  'instagram/courier-like-heart.json': row('', 1, "Instagram's heart: a sticker"),
  'instagram/courier-story-mention.json': row('', 1, 'a story mention: a document of its URL'),
  'instagram/courier-unsent-msg.json': { expect: 'delete' },

  // Email: raw messages through the Worker's email handler.
  'email/cloudflare-docs-html-only-windows-1252.eml': row('Hi there', 0, 'HTML only: its text'),
  'email/hunnysoft-m0001-iso-8859-1-8bit.eml': row('Die Hasen und die Frösche'),
  'email/hunnysoft-m0010-windows-1252-qp-rfc2047.eml': row('mißliche Lage'),
  'email/hunnysoft-m4001-pgp-signed-8bit.eml': row('ärger als der Tod', 1, 'the signature'),
  'email/lore-outlook-folded-message-id-patch.eml': row('Add i2c devices for the CV180x'),
  'email/mailparser-base64-attachment-root.eml': row('', 1, 'the whole message is a file'),
  'email/mailparser-delivery-status-bounce.eml': row('An error occurred while trying', 2),
  'email/mailparser-nested-no-message-id.eml': row('Good evening.'),
  'email/mikel-attachment-nonascii-filename.eml': row('This is the first part.', 1),
  'email/mikel-attachment-rfc2231-iso-2022-jp-name-fwd.eml': row('Forwarded message', 1),
  'email/mikel-euc-kr-base64-bad-date-mbox-line.eml': row('제 이름은 Jamis입니다.'),
  'email/mikel-iso-2022-jp-no-message-id.eml': row('すみません。'),
  'email/mikel-ks-c-5601-1987-8bit.eml': row('스티해'),
  'email/mikel-partially-encoded-subject-euc-kr.eml': row('제 이름은 Jamis입니다.'),
  'email/mikel-raw-email-reply-in-reply-to.eml': row('Message body'),
  'email/postal-mime-arf-abuse-report.eml': row('This is an email abuse report', 2),
  'email/postal-mime-mixed-no-from.eml': {
    expect: 'nothing',
    rejected: true,
    why: 'no From header: no customer to file it under, so bounced (never dropped silently)',
  },
}
