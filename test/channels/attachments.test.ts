/**
 * Attachments, channel by channel: what each vendor's media fields become in the event (payloads
 * shaped like the vendors' documented examples), that media-only messages are forwarded with an
 * empty or caption body, and the bounds (LIMITS.attachments, the metadata budget) that cut the
 * list without ever refusing the message.
 */
import { describe, expect, it } from 'vitest'
import {
  ATTACHMENTS_BUDGET_BYTES,
  boundAttachments,
  kindOfMimeType,
} from '../../contract/attachments'
import { finalizeEvent, jsonBytes, LIMITS, parseInboundEvent } from '../../contract/event'
import { slackMessageEvent, TEST_SECRETS, twilioParams } from '../../local/vendor-deliveries'
import { classifySlack } from '../../worker/channels/slack'
import { classifyTelegram } from '../../worker/channels/telegram'
import { classifyTwilio } from '../../worker/channels/twilio'
import { MAX_SPOOL_MESSAGE_BYTES } from '../../worker/spool/claim-check'
import { spoolMessage } from '../../worker/spool/message'
import { draftOf, expectValid } from './support/drafts'
import * as media from './support/media-payloads'

const bot = TEST_SECRETS.telegramBotId

describe('kindOfMimeType', () => {
  it.each([
    ['image/jpeg', 'image'],
    ['IMAGE/PNG', 'image'],
    ['video/mp4', 'video'],
    ['audio/ogg; codecs=opus', 'audio'],
    ['application/pdf', 'document'],
    ['text/calendar', 'document'],
    ['application/octet-stream', 'file'],
    ['', 'file'],
    [null, 'file'],
    ['garbage', 'file'],
  ] as const)('%j → %s', (mime, kind) => {
    expect(kindOfMimeType(mime)).toBe(kind)
  })
})

describe('Telegram media', () => {
  const message = (fields: Record<string, unknown>) => ({
    update_id: 10000,
    message: {
      message_id: 1365,
      from: { id: 1111111, is_bot: false, first_name: 'Test', language_code: 'en' },
      chat: { id: 1111111, first_name: 'Test', type: 'private' },
      date: 1441645532,
      ...fields,
    },
  })

  it('a photo: the largest PhotoSize (not the last listed), the caption as body and on the attachment', async () => {
    const update = media.telegramPhotoUpdate({ caption: 'the broken part' })
    const draft = draftOf(await classifyTelegram(update, bot))
    expect(draft.body).toBe('the broken part')
    expect(draft.attachments).toEqual([{ ...media.TELEGRAM_PHOTO, caption: 'the broken part' }])
    await expectValid(draft)
  })

  it.each([
    [
      'a voice note',
      {
        voice: {
          duration: 2,
          mime_type: 'audio/ogg',
          file_id: 'AwACAgQAAxkBAAIC',
          file_unique_id: 'AgADv',
          file_size: 9031,
        },
      },
      {
        kind: 'voice',
        mediaId: 'AwACAgQAAxkBAAIC',
        mimeType: 'audio/ogg',
        size: 9031,
        content: { file_unique_id: 'AgADv', duration: 2 },
      },
    ],
    [
      'a PDF',
      {
        document: {
          file_name: 'invoice-1234.pdf',
          mime_type: 'application/pdf',
          file_id: 'BQACAgQAAxkBAAID',
          file_unique_id: 'AgADp',
          file_size: 48213,
        },
      },
      {
        kind: 'document',
        mediaId: 'BQACAgQAAxkBAAID',
        mimeType: 'application/pdf',
        size: 48213,
        fileName: 'invoice-1234.pdf',
        content: { file_unique_id: 'AgADp' },
      },
    ],
    [
      'an animation (which also sets document): the animation only',
      {
        animation: { file_id: 'CgAAn', file_unique_id: 'An', mime_type: 'video/mp4', duration: 3 },
        document: { file_id: 'CgAAn', file_unique_id: 'An', mime_type: 'video/mp4' },
      },
      {
        kind: 'animation',
        mediaId: 'CgAAn',
        mimeType: 'video/mp4',
        content: { file_unique_id: 'An', duration: 3 },
      },
    ],
    [
      'a video note',
      { video_note: { file_id: 'DQAC', file_unique_id: 'Vn', length: 240, duration: 5 } },
      {
        kind: 'video',
        mediaId: 'DQAC',
        content: { file_unique_id: 'Vn', length: 240, duration: 5 },
      },
    ],
    [
      'a sticker',
      {
        sticker: {
          width: 512,
          height: 512,
          emoji: '👍',
          set_name: 'HotCherry',
          is_animated: false,
          is_video: false,
          type: 'regular',
          file_id: 'CAACAgIAAxkBAAIE',
          file_unique_id: 'AgADs',
          file_size: 23000,
        },
      },
      {
        kind: 'sticker',
        mediaId: 'CAACAgIAAxkBAAIE',
        size: 23000,
        content: {
          file_unique_id: 'AgADs',
          width: 512,
          height: 512,
          emoji: '👍',
          set_name: 'HotCherry',
          type: 'regular',
        },
      },
    ],
    [
      'a location',
      { location: { latitude: 52.516275, longitude: 13.377704, horizontal_accuracy: 12 } },
      {
        kind: 'location',
        content: { latitude: 52.516275, longitude: 13.377704, horizontal_accuracy: 12 },
      },
    ],
    [
      'a venue (which also sets location): one location, named',
      {
        location: { latitude: 52.516275, longitude: 13.377704 },
        venue: {
          location: { latitude: 52.516275, longitude: 13.377704 },
          title: 'Brandenburger Tor',
          address: 'Pariser Platz, 10117 Berlin',
        },
      },
      {
        kind: 'location',
        content: {
          latitude: 52.516275,
          longitude: 13.377704,
          title: 'Brandenburger Tor',
          address: 'Pariser Platz, 10117 Berlin',
        },
      },
    ],
    [
      'a contact',
      { contact: { phone_number: '+4915112345678', first_name: 'Ada', user_id: 424243 } },
      {
        kind: 'contacts',
        content: { phone_number: '+4915112345678', first_name: 'Ada', user_id: 424243 },
      },
    ],
  ])('%s without text: forwarded, empty body, one attachment', async (_name, fields, expected) => {
    const draft = draftOf(await classifyTelegram(message(fields), bot))
    expect(draft.body).toBe('')
    expect(draft.attachments).toEqual([expected])
    await expectValid(draft)
  })

  it('a text message has no attachments field (its payload hash stays what it was)', async () => {
    expect(draftOf(await classifyTelegram(message({ text: 'hi' }), bot))).not.toHaveProperty(
      'attachments',
    )
  })

  it('an edited caption carries the media again (the edit replaces the row’s attachments)', async () => {
    const update = {
      update_id: 10001,
      edited_message: {
        ...message({}).message,
        edit_date: 1441645600,
        caption: 'the broken part, again',
        document: { file_id: 'BQAC', file_unique_id: 'AgADp', mime_type: 'application/pdf' },
      },
    }
    const draft = draftOf(await classifyTelegram(update, bot))
    expect(draft.kind).toBe('edit')
    expect(draft.attachments).toMatchObject([
      { kind: 'document', caption: 'the broken part, again' },
    ])
  })

  it('a new chat photo stays a service message (recorded, no row)', async () => {
    const update = message({
      new_chat_photo: [{ file_id: 'x', file_unique_id: 'y', width: 1, height: 1 }],
    })
    expect((await classifyTelegram(update, bot)).action).toBe('record')
  })
})

describe('Slack files', () => {
  const file = media.SLACK_FILE
  const fileShare = (files: unknown[], text = '') => ({
    kind: 'json' as const,
    body: media.slackFileShare(files, { text }),
  })

  it('a file_share without text: forwarded, empty body, the file’s id, type, size, name and url_private', async () => {
    const draft = draftOf(await classifySlack(fileShare([file])))
    expect(draft.body).toBe('')
    expect(draft.attachments).toEqual([media.SLACK_FILE_ATTACHMENT])
    await expectValid(draft)
  })

  it('an image with text, and a Slack Connect stub (id only): two attachments, the text as body', async () => {
    const image = { ...file, id: 'F0B', name: 'IMG_1.jpg', mimetype: 'image/jpeg', size: 1_234_567 }
    const stub = {
      id: 'F0C',
      mode: 'file_access',
      file_access: 'check_file_info',
      created: 0,
      timestamp: 0,
      user: '',
    }
    const draft = draftOf(await classifySlack(fileShare([image, stub], 'see attached')))
    expect(draft.body).toBe('see attached')
    expect(draft.attachments).toEqual([
      expect.objectContaining({ kind: 'image', mediaId: 'F0B', fileName: 'IMG_1.jpg' }),
      { kind: 'file', mediaId: 'F0C' },
    ])
  })

  it('an edit (message_changed) carries the new message’s files', async () => {
    const base = slackMessageEvent()
    const event = {
      type: 'message',
      subtype: 'message_changed',
      channel: 'C123ABC456',
      ts: '1355517600.000008',
      event_ts: '1355517600.000008',
      message: {
        type: 'message',
        user: 'U123ABC456',
        text: 'now with a caption',
        ts: '1355517523.000005',
        files: [file],
        edited: { user: 'U123ABC456', ts: '1355517600.000000' },
      },
    }
    const draft = draftOf(await classifySlack({ kind: 'json', body: { ...base, event } }))
    expect(draft.kind).toBe('edit')
    expect(draft.attachments).toMatchObject([{ mediaId: 'F0A12BCDE' }])
  })

  it('a plain message has no attachments field', async () => {
    const draft = draftOf(await classifySlack({ kind: 'json', body: slackMessageEvent() }))
    expect(draft).not.toHaveProperty('attachments')
  })
})

describe('Twilio media', () => {
  const mediaUrl = media.twilioMediaUrl
  const withMedia = (list: Array<[string, string]>, body = '') =>
    new Map(media.twilioMediaParams(list, { body }))

  it('an MMS with two media and no text: forwarded, empty body, URL, Media SID and type each', async () => {
    const me0 = 'ME0123456789abcdef0123456789abcdef'
    const me1 = 'MEfedcba9876543210fedcba9876543210'
    const draft = draftOf(
      await classifyTwilio(
        withMedia([
          ['image/jpeg', mediaUrl(me0)],
          ['application/pdf', mediaUrl(me1)],
        ]),
      ),
    )
    expect(draft.body).toBe('')
    expect(draft.attachments).toEqual([
      { kind: 'image', mediaId: me0, url: mediaUrl(me0), mimeType: 'image/jpeg' },
      { kind: 'document', mediaId: me1, url: mediaUrl(me1), mimeType: 'application/pdf' },
    ])
    await expectValid(draft)
  })

  it('a WhatsApp voice note (audio/ogg) with a caption-like Body', async () => {
    const me = 'ME00000000000000000000000000000001'
    const draft = draftOf(await classifyTwilio(withMedia([['audio/ogg', mediaUrl(me)]], 'listen')))
    expect(draft.body).toBe('listen')
    expect(draft.attachments).toMatchObject([{ kind: 'audio', mimeType: 'audio/ogg' }])
  })

  it('a WhatsApp location (Latitude, Longitude, Address, Label; empty Body): a location attachment', async () => {
    const params = new Map(twilioParams({ body: '' }))
    params.set('Latitude', '37.7879277')
    params.set('Longitude', '-122.4075519')
    params.set('Address', '375 Beale St, San Francisco, CA 94105')
    params.set('Label', 'Twilio HQ')
    const draft = draftOf(await classifyTwilio(params))
    expect(draft.body).toBe('')
    expect(draft.attachments).toEqual([
      {
        kind: 'location',
        content: {
          latitude: 37.7879277,
          longitude: -122.4075519,
          name: 'Twilio HQ',
          address: '375 Beale St, San Francisco, CA 94105',
        },
      },
    ])
    await expectValid(draft)
  })

  it('coordinates that are not decimal degrees in range are no location', async () => {
    for (const [latitude, longitude] of [
      ['91', '0'],
      ['0', '-180.5'],
      ['1e2', '0'],
      ['', '0'],
      ['north', 'west'],
    ] as const) {
      const params = new Map(twilioParams())
      params.set('Latitude', latitude)
      params.set('Longitude', longitude)
      expect(draftOf(await classifyTwilio(params))).not.toHaveProperty('attachments')
    }
  })

  it('NumMedia=0 (the common case): no attachments field; a forged NumMedia costs nothing', async () => {
    expect(draftOf(await classifyTwilio(new Map(twilioParams())))).not.toHaveProperty('attachments')
    const forged = new Map(twilioParams())
    forged.set('NumMedia', '1000000000')
    expect(draftOf(await classifyTwilio(forged))).not.toHaveProperty('attachments')
  })

  it(`keeps the first ${LIMITS.attachments} of more media, and the message`, async () => {
    const sixty = Array.from({ length: 60 }, (_, n): [string, string] => [
      'image/png',
      mediaUrl(`ME${String(n).padStart(32, '0')}`),
    ])
    const draft = draftOf(await classifyTwilio(withMedia(sixty)))
    expect(draft.attachments).toHaveLength(LIMITS.attachments)
    expect(draft.attachments?.[49]?.mediaId).toBe(`ME${'49'.padStart(32, '0')}`)
    await expectValid(draft)
  })
})

describe('bounds', () => {
  it('cuts strings to their field’s bound, leaves out a URL too long to be one, and oversized content', async () => {
    const [kept] =
      boundAttachments([
        {
          kind: 'document',
          fileName: 'n'.repeat(LIMITS.subject + 10),
          mimeType: 'm'.repeat(LIMITS.name + 1),
          url: `https://x.example/${'u'.repeat(LIMITS.url)}`,
          mediaId: '',
          content: { vcard: 'v'.repeat(LIMITS.content) },
        },
      ]) ?? []
    expect(kept).toEqual({
      kind: 'document',
      fileName: 'n'.repeat(LIMITS.subject),
      mimeType: 'm'.repeat(LIMITS.name),
    })
  })

  it('keeps what fits the metadata budget, in order, and says nothing is left as undefined', async () => {
    const big = Array.from({ length: 50 }, (_, n) => ({
      kind: 'file' as const,
      fileName: `${n}-${'x'.repeat(LIMITS.subject - 4)}`,
    }))
    const kept = boundAttachments(big) ?? []
    expect(kept.length).toBeGreaterThan(0)
    expect(kept.length).toBeLessThan(50)
    expect(new TextEncoder().encode(JSON.stringify(kept)).byteLength).toBeLessThanOrEqual(
      ATTACHMENTS_BUDGET_BYTES,
    )
    expect(kept.map((a) => a.fileName?.split('-')[0])).toEqual(kept.map((_, n) => String(n)))
    expect(boundAttachments([])).toBeUndefined()
  })

  it('a full text body plus the most metadata an event keeps still fits one spool message', async () => {
    const draft = draftOf(
      await classifyTelegram(
        {
          update_id: 1,
          message: { message_id: 1, date: 1, chat: { id: 1 }, text: 'x'.repeat(LIMITS.body) },
        },
        bot,
      ),
    )
    const names = Array.from({ length: 60 }, (_, n) => ({
      kind: 'document' as const,
      fileName: `${n}${'é'.repeat(LIMITS.subject)}`,
      mediaId: 'i'.repeat(LIMITS.key),
    }))
    const event = await finalizeEvent({ ...draft, attachments: boundAttachments(names) })
    expect(parseInboundEvent(event).ok).toBe(true)
    const bytes = jsonBytes(spoolMessage(`dedup:telegram:${bot}:1`, event))
    expect(bytes).toBeLessThan(MAX_SPOOL_MESSAGE_BYTES)
  })
})
