/**
 * Key extraction, channel by channel: which deliveries become messages, under which delivery key
 * (Redis) and message key (Postgres), and which are recorded or ignored.
 */
import { describe, expect, it } from 'vitest'
import { finalizeEvent } from '../../contract/event'
import {
  SLACK_APP,
  slackMessageEvent,
  TEST_ACCOUNT_TAG,
  TEST_SECRETS,
  telegramUpdate,
  twilioParams,
} from '../../local/vendor-deliveries'
import { classifySlack, parseSlack, type SlackPayload } from '../../worker/channels/slack'
import { classifyTelegram } from '../../worker/channels/telegram'
import { classifyTwilio } from '../../worker/channels/twilio'
import { accountTag, compactSid, sidFromCompact } from '../../worker/channels/twilio-keys'
import type { Delivery } from '../../worker/channels/types'
import { formatDeliveryKey } from '../../worker/channels/types'
import { InvalidPayloadError } from '../../worker/errors'

const json = (body: Record<string, unknown>): SlackPayload => ({ kind: 'json', body })

/** The keys and kind of a delivery, or its action when it is not forwarded. */
function summary(delivery: Delivery) {
  if (delivery.action === 'forward') {
    return {
      action: 'forward',
      deliveryKey: formatDeliveryKey(delivery.key),
      messageKey: delivery.draft.messageKey,
      kind: delivery.draft.kind,
      channel: delivery.draft.channel,
      sender: delivery.draft.sender.externalId,
    }
  }
  if (delivery.action === 'record')
    return { action: 'record', deliveryKey: formatDeliveryKey(delivery.key) }
  if (delivery.action === 'ignore') return { action: 'ignore', reason: delivery.reason }
  if (delivery.action === 'unrecognized') return { action: 'unrecognized', reason: delivery.reason }
  return { action: 'challenge' }
}

const withEvent = (event: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  ...slackMessageEvent(),
  event,
  ...extra,
})

describe('Slack keys', () => {
  it.each([
    [
      'a message',
      slackMessageEvent({ eventId: 'Ev1', team: 'T1', channel: 'C1', ts: '1.000100', user: 'U1' }),
      {
        action: 'forward',
        deliveryKey: 'dedup:slack:A123ABC456:Ev1',
        messageKey: 'T1:C1:1.000100',
        kind: 'message',
        channel: 'slack',
        sender: 'U1',
      },
    ],
    [
      'an app_mention of the same message (another event id, same message key)',
      withEvent(
        {
          type: 'app_mention',
          channel: 'C123ABC456',
          user: 'U9',
          ts: '1355517523.000005',
          text: 'hi',
        },
        { event_id: 'Ev2' },
      ),
      {
        action: 'forward',
        deliveryKey: 'dedup:slack:A123ABC456:Ev2',
        messageKey: 'T123ABC456:C123ABC456:1355517523.000005',
        kind: 'message',
        channel: 'slack',
        sender: 'U9',
      },
    ],
    [
      'message_changed (edit of message.ts)',
      withEvent({
        type: 'message',
        subtype: 'message_changed',
        channel: 'C123ABC456',
        ts: '1358878755.000001',
        message: {
          type: 'message',
          user: 'U123ABC456',
          text: 'Hello, world!',
          ts: '1355517523.000005',
          edited: { user: 'U123ABC456', ts: '1358878755.000001' },
        },
      }),
      {
        action: 'forward',
        deliveryKey: 'dedup:slack:A123ABC456:Ev123ABC456',
        messageKey: 'T123ABC456:C123ABC456:1355517523.000005',
        kind: 'edit',
        channel: 'slack',
        sender: 'U123ABC456',
      },
    ],
    [
      'message_deleted (delete of deleted_ts)',
      withEvent({
        type: 'message',
        subtype: 'message_deleted',
        hidden: true,
        channel: 'C123ABC456',
        ts: '1358878755.000001',
        deleted_ts: '1358878749.000002',
        previous_message: { user: 'U5', ts: '1358878749.000002', text: 'old' },
      }),
      {
        action: 'forward',
        deliveryKey: 'dedup:slack:A123ABC456:Ev123ABC456',
        messageKey: 'T123ABC456:C123ABC456:1358878749.000002',
        kind: 'delete',
        channel: 'slack',
        sender: 'U5',
      },
    ],
    [
      'a bot message with bot_id only',
      withEvent({ type: 'message', channel: 'C1', bot_id: 'B1', ts: '1.1', text: 'echo' }),
      { action: 'ignore', reason: 'slack_bot_message' },
    ],
    [
      'a bot_message subtype',
      withEvent({
        type: 'message',
        subtype: 'bot_message',
        channel: 'C1',
        ts: '1.1',
        text: 'x',
        username: 'github',
      }),
      { action: 'ignore', reason: 'slack_bot_message' },
    ],
    [
      'an edit of a bot message',
      withEvent({
        type: 'message',
        subtype: 'message_changed',
        channel: 'C1',
        ts: '2.2',
        message: { ts: '1.1', bot_id: 'B1', text: 'x' },
      }),
      { action: 'ignore', reason: 'slack_bot_message' },
    ],
    [
      'a Slackbot notice (user USLACKBOT, no bot_id)',
      withEvent({
        type: 'message',
        channel: 'D1',
        channel_type: 'im',
        user: 'USLACKBOT',
        ts: '1.1',
        text: 'You have been removed from #testing by <@U1>',
      }),
      { action: 'ignore', reason: 'slack_slackbot' },
    ],
    [
      'an edit of a Slackbot notice',
      withEvent({
        type: 'message',
        subtype: 'message_changed',
        channel: 'D1',
        ts: '2.2',
        message: { ts: '1.1', user: 'USLACKBOT', text: 'x' },
      }),
      { action: 'ignore', reason: 'slack_slackbot' },
    ],
    [
      'a channel_join notice',
      withEvent({ type: 'message', subtype: 'channel_join', channel: 'C1', user: 'U1', ts: '1.1' }),
      { action: 'ignore', reason: 'slack_subtype_channel_join' },
    ],
    [
      'a reaction_added event',
      withEvent({ type: 'reaction_added', user: 'U1', reaction: 'thumbsup', event_ts: '1.1' }),
      { action: 'ignore', reason: 'slack_event_reaction_added' },
    ],
    [
      'app_rate_limited',
      {
        token: 'x',
        type: 'app_rate_limited',
        team_id: 'T1',
        minute_rate_limited: 1518467820,
        api_app_id: 'A1',
      },
      { action: 'ignore', reason: 'app_rate_limited' },
    ],
    [
      'url_verification',
      {
        token: 'x',
        challenge: '3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P',
        type: 'url_verification',
      },
      { action: 'challenge' },
    ],
  ])('%s', async (_name, body, expected) => {
    expect(summary(await classifySlack(json(body)))).toEqual(expected)
  })

  it('falls back to a payload hash when event_id is missing, and marks the key', async () => {
    const a = await classifySlack(json(slackMessageEvent({ eventId: null })))
    const b = await classifySlack(json(slackMessageEvent({ eventId: null })))
    const other = await classifySlack(
      json(slackMessageEvent({ eventId: null, ts: '1355517523.000006' })),
    )
    expect(a.action === 'forward' && a.key).toMatchObject({ scope: 'A123ABC456', fallback: true })
    expect(summary(a)).toEqual(summary(b))
    expect(summary(a)).not.toEqual(summary(other))
  })

  /** An interactivity post, parsed as the route parses it. */
  const interaction = (payload: Record<string, unknown>) =>
    parseSlack(
      {
        bytes: new Uint8Array() as never,
        text: `payload=${encodeURIComponent(JSON.stringify(payload))}`,
      },
      'application/x-www-form-urlencoded',
    )

  // slackapi/bolt-python tests/scenario_tests/test_block_actions.py @
  // a2f21ae4b1d1d63a6a5dc533aa53a8c4badd103d (its `body`): a button pressed in a message.
  const boltBlockActions = {
    type: 'block_actions',
    user: { id: 'W111', username: 'primary-owner', name: 'primary-owner', team_id: 'T111' },
    api_app_id: 'A111',
    token: 'verification_token',
    container: { type: 'message', message_ts: '111.222', channel_id: 'C111', is_ephemeral: true },
    trigger_id: '111.222.valid',
    team: {
      id: 'T111',
      domain: 'workspace-domain',
      enterprise_id: 'E111',
      enterprise_name: 'Sandbox Org',
    },
    channel: { id: 'C111', name: 'test-channel' },
    response_url: 'https://hooks.slack.com/actions/T111/111/random-value',
    actions: [
      {
        action_id: 'a',
        block_id: 'b',
        text: { type: 'plain_text', text: 'Button', emoji: true },
        value: 'click_me_123',
        type: 'button',
        action_ts: '1596530385.194939',
      },
    ],
  }

  it('a button pressed in a message (block_actions) is a row carrying its label, in the channel', async () => {
    const press = await classifySlack(interaction(boltBlockActions))
    expect(press).toEqual({
      action: 'forward',
      key: { namespace: 'slack-interaction', scope: 'A111', id: '111.222.valid' },
      draft: {
        kind: 'message',
        channel: 'slack',
        tenant: 'T111',
        deliveryKey: 'dedup:slack-interaction:A111:111.222.valid',
        messageKey: 'T111:C111:press:W111:1596530385.194939',
        sender: { externalId: 'W111' },
        body: 'Button',
        occurredAt: '2020-08-04T08:39:45.194Z',
      },
    })
    // A press outside any conversation (a modal, the Home tab): kept, not placed in a thread.
    const { channel: _c, container: _k, ...inAModal } = boltBlockActions
    expect(await classifySlack(interaction(inAModal))).toMatchObject({ action: 'unrecognized' })
  })

  it("the app's own UI is recorded; a form submitted with what a person typed is kept", async () => {
    const closed = {
      type: 'view_closed',
      api_app_id: 'A1',
      trigger_id: '398738663015.47445629121.803a',
    }
    expect(summary(await classifySlack(interaction(closed)))).toEqual({
      action: 'record',
      deliveryKey: 'dedup:slack-interaction:A1:398738663015.47445629121.803a',
    })
    const submitted = {
      type: 'view_submission',
      api_app_id: 'A1',
      trigger_id: 't',
      view: { state: {} },
    }
    expect(await classifySlack(interaction(submitted))).toEqual({
      action: 'unrecognized',
      reason: 'slack_interaction_view_submission',
    })
  })

  it.each([
    ['not JSON', '{"type":', 'application/json'],
    ['a JSON array', '[1,2]', 'application/json'],
    [
      'an interactivity payload that is not JSON',
      'payload=%7Bnope',
      'application/x-www-form-urlencoded',
    ],
  ])('refuses a body that is %s', (_name, text, contentType) => {
    expect(() => parseSlack({ bytes: new Uint8Array() as never, text }, contentType)).toThrow(
      InvalidPayloadError,
    )
  })

  it('an event_id of any spelling is one key part (`:` written as %3A); an unplaceable callback is kept', async () => {
    expect(
      summary(await classifySlack(json(slackMessageEvent({ eventId: 'Ev1:other' })))),
    ).toMatchObject({
      action: 'forward',
      deliveryKey: `dedup:slack:${SLACK_APP}:Ev1%3Aother`,
    })
    expect(
      await classifySlack(json({ type: 'event_callback', event: { type: 'message' } })),
    ).toEqual({
      action: 'unrecognized',
      reason: 'slack_event_callback_unplaced',
    })
  })
})

describe('Twilio keys', () => {
  const account = 'AC0123456789abcdef0123456789abcdef'
  const sid = 'SM0123456789abcdef0123456789abcdef'
  // In Redis keys: the account's tag (48 bits of its SHA-256), the SID losslessly compact.
  const tag = TEST_ACCOUNT_TAG
  const compact = 'SMASNFZ4mrze8BI0VniavN7w'
  /** What a forwarded message sums up to: keyed by its account's tag and its SID, in its channel. */
  const forwarded = (channel: 'whatsapp' | 'sms', sender: string) => ({
    action: 'forward',
    deliveryKey: `dedup:${channel === 'whatsapp' ? 'wa' : 'sms'}:${tag}:${compact}`,
    messageKey: `${account}:${sid}`,
    kind: 'message',
    channel,
    sender,
  })

  it.each([
    [
      'a WhatsApp message',
      twilioParams({ from: 'whatsapp:+14017122661' }),
      forwarded('whatsapp', 'whatsapp:+14017122661'),
    ],
    [
      'an SMS',
      twilioParams({ from: '+14158675310', to: '+18005551212' }),
      forwarded('sms', '+14158675310'),
    ],
    [
      'a status callback',
      twilioParams({ status: 'delivered' }),
      { action: 'record', deliveryKey: `dedup:tw-status:${tag}:${compact}:delivered` },
    ],
    [
      'a failed status callback with its error code',
      twilioParams({ status: 'undelivered', errorCode: '30003' }),
      { action: 'record', deliveryKey: `dedup:tw-status:${tag}:${compact}:undelivered:30003` },
    ],
  ])('%s', async (_name, params, expected) => {
    expect(summary(await classifyTwilio(new Map(params)))).toEqual(expected)
  })

  it('keys each status of one message separately, apart from the inbound key', async () => {
    const keys = await Promise.all(
      ['sent', 'delivered', 'read'].map(async (status) =>
        summary(await classifyTwilio(new Map(twilioParams({ status })))),
      ),
    )
    const inbound = summary(await classifyTwilio(new Map(twilioParams())))
    expect(new Set([...keys, inbound].map((k) => JSON.stringify(k))).size).toBe(4)
  })

  it.each([
    ['without AccountSid', twilioParams().filter(([n]) => n !== 'AccountSid')],
    [
      'without MessageSid',
      twilioParams().filter(([n]) => !n.includes('Sid') || n === 'AccountSid'),
    ],
    ['without From', twilioParams().filter(([n]) => n !== 'From')],
  ])('keeps a request %s as unrecognized: not placeable, never dropped', async (_name, params) => {
    expect((await classifyTwilio(new Map(params))).action).toBe('unrecognized')
  })

  it('a MessageSid of another spelling is one key part (`:` as %3A), the message key as it is', async () => {
    expect(
      summary(await classifyTwilio(new Map(twilioParams({ messageSid: 'SM1:x' })))),
    ).toMatchObject({
      action: 'forward',
      deliveryKey: `dedup:wa:${tag}:SM1%3Ax`,
      messageKey: `${account}:SM1:x`,
    })
  })

  it('writes SIDs losslessly, and keys of at most 43 characters (88 B in Redis)', async () => {
    expect(await accountTag(account)).toBe(tag)
    expect(sidFromCompact(compact)).toBe(sid)
    expect(compactSid('SM-not-canonical')).toBe('SM-not-canonical')
    const longest = summary(
      await classifyTwilio(new Map(twilioParams({ from: '+14158675310' }))),
    ) as { deliveryKey: string }
    expect(longest.deliveryKey.length).toBeLessThanOrEqual(43)
  })

  it('keeps two accounts apart under one MessageSid', async () => {
    const other = 'AC0123456789abcdef0123456789abcdee'
    const keyOf = async (accountSid: string) =>
      (
        summary(await classifyTwilio(new Map(twilioParams({ accountSid })))) as {
          deliveryKey: string
        }
      ).deliveryKey
    expect(await keyOf(other)).not.toBe(await keyOf(account))
  })
})

describe('Telegram keys', () => {
  const bot = TEST_SECRETS.telegramBotId
  /** What a forwarded update sums up to: its keys (update id, chat:message), sender and kind. */
  const forwarded = (updateId: number, message: string, sender: string, kind = 'message') => ({
    action: 'forward',
    deliveryKey: `dedup:telegram:${bot}:${updateId}`,
    messageKey: `${bot}:${message}`,
    kind,
    channel: 'telegram',
    sender,
  })

  it.each([
    [
      'a private message',
      telegramUpdate({ updateId: 10, chatId: 7, messageId: 42 }),
      forwarded(10, '7:42', '7'),
    ],
    [
      'the same message id in another chat',
      telegramUpdate({ updateId: 11, chatId: 8, messageId: 42 }),
      forwarded(11, '8:42', '8'),
    ],
    [
      'an edit (same message key, kind edit)',
      telegramUpdate({
        updateId: 12,
        chatId: 7,
        messageId: 42,
        field: 'edited_message',
        editDate: 1700000100,
      }),
      forwarded(12, '7:42', '7', 'edit'),
    ],
    [
      'a channel post signed by the channel',
      {
        update_id: 13,
        channel_post: {
          message_id: 5,
          date: 1700000000,
          chat: { id: -1001, type: 'channel' },
          sender_chat: { id: -1001, title: 'News' },
          text: 'x',
        },
      },
      forwarded(13, '-1001:5', '-1001'),
    ],
    [
      'a callback query (a button press): a row of its own, keyed by its id',
      { update_id: 14, callback_query: { id: '4382bfdwdsb323b2d9', from: { id: 7 }, data: 'x' } },
      forwarded(14, 'cb:4382bfdwdsb323b2d9', '7'),
    ],
  ])('%s', async (_name, update, expected) => {
    expect(summary(await classifyTelegram(update, bot))).toEqual(expected)
  })

  it.each([
    ['new_chat_members', { new_chat_members: [{ id: 9, is_bot: false, first_name: 'B' }] }],
    ['left_chat_member', { left_chat_member: { id: 9, is_bot: false, first_name: 'B' } }],
    ['pinned_message', { pinned_message: { message_id: 1, date: 0, chat: { id: 7 } } }],
    ['new_chat_title', { new_chat_title: 'Renamed' }],
    ['delete_chat_photo', { delete_chat_photo: true }],
    ['forum_topic_created', { forum_topic_created: { name: 't', icon_color: 1 } }],
    ['video_chat_started', { video_chat_started: {} }],
  ])('records a service message (%s) without forwarding it', async (_name, service) => {
    const message = {
      message_id: 3,
      date: 1700000000,
      chat: { id: -7 },
      from: { id: 7 },
      ...service,
    }
    expect(summary(await classifyTelegram({ update_id: 20, message }, bot))).toEqual({
      action: 'record',
      deliveryKey: `dedup:telegram:${bot}:20`,
    })
  })

  it('forwards a media message without text (not a service message)', async () => {
    const message = { message_id: 3, date: 1700000000, chat: { id: 7 }, from: { id: 7 } }
    const photo = {
      ...message,
      photo: [{ file_id: 'f', file_unique_id: 'u', width: 1, height: 1 }],
    }
    expect(summary(await classifyTelegram({ update_id: 21, message: photo }, bot))).toMatchObject({
      action: 'forward',
      messageKey: `${bot}:7:3`,
    })
  })

  it('forwards business messages and their edits, keyed by bot and business connection', async () => {
    const message = (extra: Record<string, unknown>) => ({
      business_connection_id: 'BC1',
      message_id: 4,
      date: 1700000000,
      chat: { id: 7 },
      from: { id: 7 },
      text: 't',
      ...extra,
    })
    const created = await classifyTelegram({ update_id: 30, business_message: message({}) }, bot)
    const edited = await classifyTelegram(
      { update_id: 31, edited_business_message: message({ edit_date: 1700000001 }) },
      bot,
    )
    expect([summary(created), summary(edited)]).toMatchObject([
      { action: 'forward', messageKey: `${bot}:biz:BC1:7:4`, kind: 'message' },
      { action: 'forward', messageKey: `${bot}:biz:BC1:7:4`, kind: 'edit' },
    ])
    // The business account's tenant is its own: its customers are not the bot's.
    expect(created.action === 'forward' && created.draft.tenant).toBe(`${bot}:biz:BC1`)
  })

  it("ignores the business account's own messages in its chats (the owner's, or a bot's for it)", async () => {
    const outgoing = (extra: Record<string, unknown>) => ({
      update_id: 32,
      business_message: {
        business_connection_id: 'BC1',
        message_id: 5,
        date: 1700000000,
        chat: { id: 7, type: 'private' },
        text: 'we open at 9',
        ...extra,
      },
    })
    for (const update of [
      outgoing({ from: { id: 99 } }),
      outgoing({ from: { id: 99 }, sender_business_bot: { id: 1, is_bot: true } }),
    ]) {
      expect(summary(await classifyTelegram(update, bot))).toEqual({
        action: 'ignore',
        reason: 'telegram_business_outgoing',
      })
    }
  })

  it('gives an edit its update_id as the sequence that orders edits of the same second', async () => {
    const edit = await classifyTelegram(
      telegramUpdate({ updateId: 77, field: 'edited_message', editDate: 1700000100 }),
      bot,
    )
    expect(edit.action === 'forward' && edit.draft.editSeq).toBe(77)
  })

  it('uses edit_date as the time of an edit', async () => {
    const delivery = await classifyTelegram(
      telegramUpdate({ field: 'edited_message', date: 1700000000, editDate: 1700000100 }),
      bot,
    )
    expect(delivery.action === 'forward' && delivery.draft.occurredAt).toBe(
      '2023-11-14T22:15:00.000Z',
    )
  })

  it('keys a lower update_id after a higher one as its own delivery (ids can restart randomly)', async () => {
    const high = summary(
      await classifyTelegram(telegramUpdate({ updateId: 900, messageId: 1 }), bot),
    )
    const low = summary(await classifyTelegram(telegramUpdate({ updateId: 3, messageId: 2 }), bot))
    expect(low).toMatchObject({ action: 'forward', deliveryKey: `dedup:telegram:${bot}:3` })
    expect(low).not.toEqual(high)
  })

  it.each([
    ['without update_id', { message: telegramUpdate().message }],
    ['with a string update_id', { ...telegramUpdate(), update_id: '10' }],
    ['with a message without chat', { update_id: 1, message: { message_id: 1, date: 1 } }],
  ])(
    'keeps an update %s as unrecognized: it cannot be placed, and is not dropped',
    async (_name, update) => {
      expect((await classifyTelegram(update, bot)).action).toBe('unrecognized')
    },
  )
})

describe('payload hash', () => {
  it('is the same for a Twilio redelivery received at another time (Twilio sends no time)', async () => {
    const params = new Map(twilioParams())
    const at = (seconds: number) => classifyTwilio(params, { nowSeconds: () => seconds })
    const [first, later] = [await at(1_700_000_000), await at(1_700_000_090)]
    if (first.action !== 'forward' || later.action !== 'forward') throw new Error('not forwarded')
    expect(first.draft.occurredAt).not.toBe(later.draft.occurredAt)
    expect((await finalizeEvent(first.draft)).payloadHash).toBe(
      (await finalizeEvent(later.draft)).payloadHash,
    )
  })

  it('differs when the text under the same key differs', async () => {
    const hash = async (body: string) => {
      const d = await classifyTwilio(new Map(twilioParams({ body })))
      if (d.action !== 'forward') throw new Error('not forwarded')
      return (await finalizeEvent(d.draft)).payloadHash
    }
    expect(await hash('one')).not.toBe(await hash('two'))
  })
})
