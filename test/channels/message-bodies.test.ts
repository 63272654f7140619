/**
 * Bodies that are no plain `text` field: a Slack message forwarding others (legacy attachments
 * with `is_share`), a Telegram poll or dice throw. Through the channels' classify, as a delivery
 * is: the body written out (worker/channels/slack-body.ts, telegram-body.ts), bounded to
 * LIMITS.body without half a surrogate pair, the event valid, and the keys those of any message.
 */
import { describe, expect, it } from 'vitest'
import { LIMITS } from '../../contract/event'
import { slackMessageEvent, TEST_SECRETS, telegramUpdate } from '../../local/vendor-deliveries'
import { classifySlack } from '../../worker/channels/slack'
import { classifyTelegram } from '../../worker/channels/telegram'
import { draftOf, expectValid } from './support/drafts'

/** A lone surrogate (half a pair); with the `u` flag a whole pair is one code point, not Cs. */
const HALF_PAIR = /\p{Cs}/u

/**
 * Text that, after `prefix` (what the body writes before it), puts a surrogate pair across the
 * LIMITS.body boundary, with more after it: cut right, the body is one unit short of the bound.
 */
function straddling(prefix: string): string {
  return `${'q'.repeat(LIMITS.body - 1 - prefix.length)}😀${'z'.repeat(500)}`
}

describe('Slack: a message forwarding others', () => {
  /** A share as Slack writes it (test/corpus/payloads/slack/forwarded-message.json). */
  const share = (fields: Record<string, unknown>) => ({
    ts: '1724952281.623809',
    channel_id: 'C07KTH1T4CQ',
    is_msg_unfurl: true,
    is_share: true,
    from_url: 'https://example.slack.com/archives/C07KTH1T4CQ/p1724952281623809',
    footer: 'Slack Conversation',
    ...fields,
  })

  async function bodyOf(message: Record<string, unknown>, edit = false): Promise<string> {
    const payload = slackMessageEvent(edit ? { editedAt: '1724952400.000100' } : {})
    const event = payload.event as Record<string, unknown>
    const target = edit ? (event.message as Record<string, unknown>) : event
    for (const field of ['text', 'attachments']) delete target[field]
    Object.assign(target, message)
    const draft = draftOf(await classifySlack({ kind: 'json', body: payload }))
    await expectValid(draft)
    return draft.body
  }

  it('without text of its own: the shared message, quoted, after its author', async () => {
    const attachments = [share({ text: '123', author_name: 'lev' })]
    expect(await bodyOf({ text: '', attachments })).toBe('Forwarded message from lev:\n> 123')
    expect(await bodyOf({ attachments })).toBe('Forwarded message from lev:\n> 123')
  })

  it('with text of its own: the text, a blank line, then the share', async () => {
    const body = await bodyOf({
      text: 'see this',
      attachments: [share({ text: 'the original', author_name: 'lev' })],
    })
    expect(body).toBe('see this\n\nForwarded message from lev:\n> the original')
  })

  it('several shares in order, each line quoted; the author by name, by id, or none', async () => {
    const body = await bodyOf({
      text: 'three of them',
      attachments: [
        share({ text: 'first line\n\nthird line', author_name: 'lev' }),
        share({ text: 'by id only', author_id: 'U05JAA9EN4T' }),
        share({ fallback: '[August 29th, 2024 10:24 AM] ann: only a fallback' }),
        share({ pretext: 'above it', text: 'and the text', author_name: 'kim' }),
      ],
    })
    expect(body).toBe(
      [
        'three of them',
        'Forwarded message from lev:\n> first line\n>\n> third line',
        'Forwarded message from <@U05JAA9EN4T>:\n> by id only',
        'Forwarded message:\n> [August 29th, 2024 10:24 AM] ann: only a fallback',
        'Forwarded message from kim:\n> above it\n> and the text',
      ].join('\n\n'),
    )
  })

  it('a share without any text still says a message was forwarded', async () => {
    expect(await bodyOf({ attachments: [share({ author_name: 'lev' })] })).toBe(
      'Forwarded message from lev:',
    )
  })

  it('leaves out what is not a share: a link unfurl, a legacy bot attachment, junk', async () => {
    const link = '<https://example.slack.com/archives/C043YJGBY49/p1663966292304369>'
    const body = await bodyOf({
      text: link,
      attachments: [
        share({ text: 'unfurled', author_name: 'jadel', is_share: undefined }),
        { title: 'A web page', text: 'its preview', fallback: 'A web page' },
        share({ text: 'a string flag', is_share: 'true' }),
        null,
        'not an object',
      ],
    })
    expect(body).toBe(link)
  })

  it('an edit of a forward (message_changed) keeps the forwarded text', async () => {
    const body = await bodyOf(
      { text: 'edited comment', attachments: [share({ text: '123', author_name: 'lev' })] },
      true,
    )
    expect(body).toBe('edited comment\n\nForwarded message from lev:\n> 123')
  })

  it('is bounded to LIMITS.body, never cutting a surrogate pair', async () => {
    const prefix = 'Forwarded message:\n> '
    const body = await bodyOf({ attachments: [share({ text: straddling(prefix) })] })
    expect(body.length).toBe(LIMITS.body - 1)
    expect(body).not.toMatch(HALF_PAIR)
    expect(body.startsWith(`${prefix}qqq`)).toBe(true)
    expect(body.endsWith('q')).toBe(true)
  })

  it('keys do not depend on the forwarded text', async () => {
    const plain = draftOf(await classifySlack({ kind: 'json', body: slackMessageEvent() }))
    const payload = slackMessageEvent()
    ;(payload.event as Record<string, unknown>).attachments = [share({ text: 'x' })]
    const forward = draftOf(await classifySlack({ kind: 'json', body: payload }))
    expect(forward.body).not.toBe(plain.body)
    expect([forward.deliveryKey, forward.messageKey]).toEqual([plain.deliveryKey, plain.messageKey])
  })
})

describe('Telegram: polls and dice', () => {
  const bot = TEST_SECRETS.telegramBotId

  /** The body of a message with `fields` in place of its text. */
  async function bodyOf(fields: Record<string, unknown>): Promise<string> {
    const update = telegramUpdate({ updateId: 77 })
    const message = update.message as Record<string, unknown>
    delete message.text
    Object.assign(message, fields)
    const draft = draftOf(await classifyTelegram(update, bot))
    await expectValid(draft)
    return draft.body
  }

  /** A Poll as the Bot API sends it (test/corpus/payloads/telegram/msg-poll.json). */
  const poll = (question: string, options: string[], extra: Record<string, unknown> = {}) => ({
    poll: {
      id: '5272018969396510722',
      question,
      options: options.map((text) => ({ text, voter_count: 0 })),
      total_voter_count: 0,
      is_closed: false,
      is_anonymous: true,
      type: 'regular',
      allows_multiple_answers: false,
      ...extra,
    },
  })

  it('a poll: its question, then one option a line', async () => {
    expect(await bodyOf(poll('Where do we meet?', ['Office', 'Café']))).toBe(
      'Poll: Where do we meet?\n- Office\n- Café',
    )
  })

  it('a quiz says so', async () => {
    expect(await bodyOf(poll('2 + 2?', ['3', '4'], { type: 'quiz', correct_option_id: 1 }))).toBe(
      'Quiz: 2 + 2?\n- 3\n- 4',
    )
  })

  it('a poll with many options lists every one, in order', async () => {
    const options = Array.from({ length: 100 }, (_, i) => `option ${i + 1}`)
    const lines = (await bodyOf(poll('Pick one', options))).split('\n')
    expect(lines).toHaveLength(101)
    expect(lines[0]).toBe('Poll: Pick one')
    expect(lines.slice(1)).toEqual(options.map((option) => `- ${option}`))
  })

  it('an oversized question is cut to LIMITS.body, never inside a surrogate pair', async () => {
    const body = await bodyOf(poll(straddling('Poll: '), ['a', 'b']))
    expect(body.length).toBe(LIMITS.body - 1)
    expect(body).not.toMatch(HALF_PAIR)
    expect(body.startsWith('Poll: qqq')).toBe(true)
    expect(body.endsWith('q')).toBe(true)
  })

  it('options that are not text are skipped; a poll of nothing is no row: kept as unrecognized', async () => {
    const odd = { poll: { question: 'Q', options: [{ text: 'yes' }, { voter_count: 1 }, 'no'] } }
    expect(await bodyOf(odd)).toBe('Poll: Q\n- yes')
    const update = telegramUpdate({ updateId: 78 })
    const message = update.message as Record<string, unknown>
    delete message.text
    message.poll = { options: [] }
    expect(await classifyTelegram(update, bot)).toEqual({
      action: 'unrecognized',
      reason: 'telegram_message_empty',
    })
  })

  // teloxide/teloxide crates/teloxide-core/src/types/update.rs @ 08d7d8f6b4195fae8a43414809ce24cf493b4c61
  // (issue_1107): a forwarded story, which was an empty row.
  it('a forwarded story: its chat, written out', async () => {
    const story = {
      chat: { id: -1002149282975, title: 'TON Spin', type: 'channel', username: 'TONSpinChannel' },
      id: 2,
    }
    expect(await bodyOf({ story })).toBe('Story from TON Spin (@TONSpinChannel)')
  })

  it.each([
    [{ emoji: '🎲', value: 4 }, '🎲 4'],
    [{ emoji: '🎯', value: 6 }, '🎯 6'],
    [{ emoji: '🎰', value: 64 }, '🎰 64'],
    [{ value: 3 }, '🎲 3'],
    [{ emoji: '🏀', value: 'two' }, '🏀'],
  ])('a dice throw %j: %s', async (dice, expected) => {
    expect(await bodyOf({ dice })).toBe(expected)
  })

  it('text and captions are the body as before, whatever else the message has', async () => {
    expect(await bodyOf({ text: 'plain', dice: { emoji: '🎲', value: 1 } })).toBe('plain')
    expect(await bodyOf({ caption: 'a caption', ...poll('Q', ['a']) })).toBe('a caption')
  })

  it('keys do not depend on the poll', async () => {
    const plain = draftOf(await classifyTelegram(telegramUpdate({ updateId: 77 }), bot))
    const update = telegramUpdate({ updateId: 77 })
    const message = update.message as Record<string, unknown>
    delete message.text
    Object.assign(message, poll('Q', ['a', 'b']))
    const withPoll = draftOf(await classifyTelegram(update, bot))
    expect(withPoll.body).toBe('Poll: Q\n- a\n- b')
    expect([withPoll.deliveryKey, withPoll.messageKey]).toEqual([
      plain.deliveryKey,
      plain.messageKey,
    ])
  })
})
