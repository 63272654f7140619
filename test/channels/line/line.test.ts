/**
 * The LINE channel's pure parts: the signature (the self-check vector: LINE publishes none), the
 * verification per bot (`destination`), the settings, and what each event becomes: its keys, its
 * kind (message, delete), its attachments, or why it is acknowledged and not stored.
 */
import { describe, expect, it, vi } from 'vitest'
import {
  LINE_DESTINATION,
  LINE_USER,
  lineBody,
  lineMessage,
  lineRequest,
  lineText,
  lineUnsend,
  partsOf,
} from '../../../local/vendor-deliveries'
import { classifyLine, line, lineSignature, verifyLine } from '../../../worker/channels/line'
import { parseSettings } from '../../../worker/config'
import type { Env } from '../../../worker/env'
import { items } from '../support/drafts'

const URL_ = 'https://gateway.test/webhooks/line'
const OTHER_BOT = 'Ufedcba9876543210fedcba9876543210'
const one = async (event: Record<string, unknown>) => {
  const [item] = items(await classifyLine(lineBody([event])))
  if (!item) throw new Error('no item')
  return item
}

describe('x-line-signature', () => {
  it('the self-check vector: secret `secret`, body `qwer`', async () => {
    expect(await lineSignature('secret', 'qwer')).toBe(
      'uHVaInoJKUNRtT2I5yjlh0590mEZ+98eNBhQGXZcjrw=',
    )
  })

  const perBot = {
    kind: 'per-tenant' as const,
    byTenant: new Map([
      [LINE_DESTINATION, ['secret-one']],
      [OTHER_BOT, ['secret-two', 'secret-two-old']],
    ]),
  }

  it('the bot whose secret (any of its rotation list) matched is the tenant; no match: refused', async () => {
    const body = lineBody([lineText('1', 'hi')], OTHER_BOT)
    const parts = await partsOf(await lineRequest(URL_, body, 'secret-two-old'))
    expect(await verifyLine(parts, perBot)).toEqual({ ok: true, tenant: OTHER_BOT })
    const stranger = await partsOf(await lineRequest(URL_, body, 'not-configured'))
    expect(await verifyLine(stranger, perBot)).toEqual({ ok: false, reason: 'signature_mismatch' })
  })

  it('over the exact bytes: re-serialised, missing or not base64 of 32 bytes: refused', async () => {
    const text = '{"destination":"x", "events":[]}'
    const parts = await partsOf(await lineRequest(URL_, text, 'secret-one'))
    expect(await verifyLine(parts, perBot)).toMatchObject({ ok: true })
    const reserialised = await partsOf(
      new Request(URL_, {
        method: 'POST',
        headers: parts.headers,
        body: JSON.stringify(JSON.parse(text)),
      }),
    )
    expect(await verifyLine(reserialised, perBot)).toMatchObject({ ok: false })
    const without = new Headers()
    expect(await verifyLine({ ...parts, headers: without }, perBot)).toEqual({
      ok: false,
      reason: 'missing_headers',
    })
  })
})

describe('the settings', () => {
  const env = (vars: Partial<Env>) =>
    parseSettings({
      ORIGIN_URL: 'http://127.0.0.1:8788',
      ORIGIN_SHARED_SECRET: 'o',
      ...vars,
    } as Env)

  it('a single channel secret (any bot), or each bot its own; neither: 503 naming both', async () => {
    expect(env({ LINE_CHANNEL_SECRET: 'a, b' }).line).toEqual({
      ok: true,
      value: { channelSecrets: { kind: 'shared', secrets: ['a', 'b'] } },
    })
    const byBot = env({ LINE_CHANNEL_SECRETS_BY_DESTINATION: `${LINE_DESTINATION}=x|y` })
    expect(byBot.line).toEqual({
      ok: true,
      value: {
        channelSecrets: { kind: 'per-tenant', byTenant: new Map([[LINE_DESTINATION, ['x', 'y']]]) },
      },
    })
    expect(env({}).line).toEqual({
      ok: false,
      missing: ['LINE_CHANNEL_SECRET (or LINE_CHANNEL_SECRETS_BY_DESTINATION)'],
    })
  })

  it('an entry whose key is no bot user id is warned about by position, never echoed', async () => {
    const s = env({ LINE_CHANNEL_SECRETS_BY_DESTINATION: 'bot1=s3cr3t' })
    expect(s.line.ok).toBe(false)
    expect(s.warnings.join('\n')).not.toContain('s3cr3t')
    expect(s.warnings.join('\n')).toMatch(/LINE_CHANNEL_SECRETS_BY_DESTINATION entry 1 /)
  })

  it("declares the event channel `line` and Meta's-size body bound", async () => {
    expect(line.eventChannels).toEqual(['line'])
    expect(line.maxBodyBytes).toBeGreaterThanOrEqual(1024 * 1024)
  })
})

describe('what each event becomes', () => {
  it("the console's Verify (no events): acknowledged, nothing keyed", async () => {
    expect(await classifyLine(lineBody([]))).toEqual({ action: 'ignore', reason: 'line_no_events' })
  })

  it('a text message: keyed by webhookEventId, stored under destination:message.id', async () => {
    const item = await one(
      lineText('468789577898262530', 'Hello, world', {
        webhookEventId: '01FZ74A0TDDPYRVKNK77XKC3ZR',
        timestamp: 1_462_629_479_859,
      }),
    )
    expect(item).toEqual({
      action: 'forward',
      key: { namespace: 'line', scope: LINE_DESTINATION, id: '01FZ74A0TDDPYRVKNK77XKC3ZR' },
      draft: {
        kind: 'message',
        channel: 'line',
        tenant: LINE_DESTINATION,
        deliveryKey: `dedup:line:${LINE_DESTINATION}:01FZ74A0TDDPYRVKNK77XKC3ZR`,
        messageKey: `${LINE_DESTINATION}:468789577898262530`,
        sender: { externalId: LINE_USER },
        body: 'Hello, world',
        occurredAt: '2016-05-07T13:57:59.859Z',
      },
    })
  })

  it('a redelivery (isRedelivery) and a standby copy are the same message key', async () => {
    const first = await one(lineText('42', 'x'))
    const again = await one(lineText('42', 'x', { redelivery: true, mode: 'standby' }))
    expect(first.action === 'forward' && first.draft.messageKey).toBe(
      again.action === 'forward' && again.draft.messageKey,
    )
  })

  it('a redelivery is logged with its delivery key (and nothing of the message)', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {})
    try {
      const id = '01FZ74A0TDDPYRVKNK77XKC3ZR'
      await one(lineText('43', 'secret text', { webhookEventId: id, redelivery: true }))
      await one(lineText('44', 'x'))
      const lines = log.mock.calls.map(([line]) => String(line))
      expect(lines).toEqual([
        JSON.stringify({
          level: 'info',
          msg: 'line_redelivery',
          deliveryKey: `dedup:line:${LINE_DESTINATION}:${id}`,
        }),
      ])
    } finally {
      log.mockRestore()
    }
  })

  it('unsend: a delete of the message it names', async () => {
    const item = await one(lineUnsend('325708'))
    expect(item).toMatchObject({
      action: 'forward',
      draft: { kind: 'delete', body: '', messageKey: `${LINE_DESTINATION}:325708` },
    })
  })

  it('media: the message id is the media id (LINE serves its content by it); files, locations, stickers', async () => {
    const image = await one(
      lineMessage({
        id: '354718705033693859',
        type: 'image',
        contentProvider: { type: 'line' },
        imageSet: {
          id: 'E005D41A7288F41B65593ED38FF6E9834B046AB36A37921A56BC236F13A91855',
          index: 1,
          total: 2,
        },
      }),
    )
    expect(image).toMatchObject({
      draft: {
        body: '',
        attachments: [
          {
            kind: 'image',
            mediaId: '354718705033693859',
            content: { imageSet: { index: 1, total: 2 } },
          },
        ],
      },
    })
    const external = await one(
      lineMessage({
        id: '3',
        type: 'video',
        duration: 60000,
        contentProvider: { type: 'external', originalContentUrl: 'https://example.com/v.mp4' },
      }),
    )
    expect(external).toMatchObject({
      draft: { attachments: [{ kind: 'video', mediaId: '3', url: 'https://example.com/v.mp4' }] },
    })
    const file = await one(
      lineMessage({ id: '4', type: 'file', fileName: 'file.txt', fileSize: 2138 }),
    )
    expect(file).toMatchObject({
      draft: { attachments: [{ kind: 'file', mediaId: '4', fileName: 'file.txt', size: 2138 }] },
    })
    const location = await one(
      lineMessage({
        id: '5',
        type: 'location',
        title: 'my location',
        address: '1-3 Kioicho, Chiyoda-ku, Tokyo, 102-8282, Japan',
        latitude: 35.67966,
        longitude: 139.73669,
      }),
    )
    expect(location).toMatchObject({
      draft: {
        attachments: [
          {
            kind: 'location',
            content: { title: 'my location', latitude: 35.67966, longitude: 139.73669 },
          },
        ],
      },
    })
    const sticker = await one(
      lineMessage({
        id: '6',
        type: 'sticker',
        packageId: '1',
        stickerId: '1',
        stickerResourceType: 'STATIC',
        keywords: ['Happy'],
      }),
    )
    expect(sticker).toMatchObject({
      draft: {
        attachments: [{ kind: 'sticker', mediaId: '1', content: { packageId: '1' } }],
      },
    })
  })

  it('the events LINE documents as no message are answered with nothing kept; an unknown one is kept whole', async () => {
    const follow = { ...lineUnsend('1'), type: 'follow', unsend: undefined }
    expect(await one(follow)).toEqual({ action: 'ignore', reason: 'line_type_follow' })
    const hologram = lineMessage({ id: '7', type: 'hologram' })
    expect(await one(hologram)).toEqual({
      action: 'unrecognized',
      reason: 'line_message_type_hologram',
      payload: JSON.stringify({ destination: LINE_DESTINATION, events: [hologram] }),
    })
  })

  it('what cannot be keyed is kept as unrecognized, never guessed at; an id of any spelling is kept', async () => {
    expect(await one({ ...lineText('8', 'x'), webhookEventId: undefined })).toMatchObject({
      action: 'unrecognized',
      reason: 'line_event_without_id',
    })
    expect(await one(lineText('not:digits', 'x'))).toMatchObject({
      action: 'forward',
      draft: { messageKey: `${LINE_DESTINATION}:not:digits` },
    })
    expect(await one({ ...lineText('9', 'x'), source: { type: 'user' } })).toMatchObject({
      action: 'unrecognized',
      reason: 'line_event_without_sender',
    })
    expect(await classifyLine({ events: [lineText('10', 'x')] })).toEqual({
      action: 'unrecognized',
      reason: 'line_without_destination',
    })
  })

  it('a batch: each event its own delivery, in order', async () => {
    const batch = items(
      await classifyLine(lineBody([lineText('11', 'a'), lineUnsend('11'), lineText('12', 'b')])),
    )
    expect(batch.map((item) => item.action === 'forward' && item.draft.kind)).toEqual([
      'message',
      'delete',
      'message',
    ])
  })
})

/**
 * LINE's SDKs' own webhook fixtures: line/line-bot-sdk-python tests/v3/text/webhook.json @
 * e1fa9338a3230ef4912aa387778641a505cf7372 (events 1, 10, 26, 27, as published; its `destination`
 * "U123") and line/line-bot-sdk-nodejs test/libs-webhook.spec.ts @
 * 3c0a10c71692fc877fc97b9fcc8fd911fd5c7c04 ("messageEditedEvent", "unknownEvent"). Each was
 * answered "ignored" and dropped: the edit, the room's image, the postback, the new event type.
 */
describe("LINE's SDK fixtures", () => {
  const base = {
    replyToken: 'nHuyWiB7yP5Zw52FIkcQobQuGDXCTA',
    mode: 'active',
    timestamp: 1462629479859,
    webhookEventId: 'testwebhookeventid',
    deliveryContext: { isRedelivery: false },
  }
  const user = { type: 'user', userId: 'U206d25c2ea6bd87c17655609a1c37cb8' }
  const fixture = async (event: Record<string, unknown>) => {
    const [item] = items(await classifyLine({ destination: 'U123', events: [event] }))
    return item
  }

  it('messageEdited: an edit of the message it names, ordered by its time', async () => {
    const edited = {
      ...base,
      type: 'messageEdited',
      source: user,
      message: {
        id: '325708',
        type: 'text',
        text: 'Hello, edited world',
        quoteToken: 'quoteToken',
      },
    }
    expect(await fixture(edited)).toEqual({
      action: 'forward',
      key: { namespace: 'line', scope: 'U123', id: 'testwebhookeventid' },
      draft: {
        kind: 'edit',
        channel: 'line',
        tenant: 'U123',
        deliveryKey: 'dedup:line:U123:testwebhookeventid',
        messageKey: 'U123:325708',
        sender: { externalId: 'U206d25c2ea6bd87c17655609a1c37cb8' },
        body: 'Hello, edited world',
        occurredAt: '2016-05-07T13:57:59.859Z',
      },
    })
    // The Node SDK's: an edit in a group.
    const group = {
      type: 'messageEdited',
      replyToken: 'aaaa',
      message: { type: 'text', id: 'aaaaaa', text: 'hello edited', quoteToken: 'bbbbbb' },
      timestamp: 333333,
      mode: 'active',
      webhookEventId: 'cccccc',
      deliveryContext: { isRedelivery: false },
      source: { type: 'group', groupId: 'groupId', userId: 'userId' },
    }
    expect(await fixture(group)).toMatchObject({
      action: 'forward',
      draft: {
        kind: 'edit',
        messageKey: 'U123:aaaaaa',
        body: 'hello edited',
        sender: { externalId: 'userId' },
      },
    })
  })

  it('a room message without source.userId: one row in the room, the room as its sender', async () => {
    const image = {
      ...base,
      type: 'message',
      source: { type: 'room', roomId: 'Ra8dbf4673c4c812cd491258042226c99' },
      message: {
        id: '325708',
        type: 'image',
        contentProvider: {
          type: 'external',
          originalContentUrl: 'https://example.com',
          previewImageUrl: 'https://example.com',
        },
        quoteToken: 'quoteToken',
      },
    }
    expect(await fixture(image)).toMatchObject({
      action: 'forward',
      draft: {
        kind: 'message',
        messageKey: 'U123:325708',
        sender: { externalId: 'room:Ra8dbf4673c4c812cd491258042226c99' },
        attachments: [{ kind: 'image', mediaId: '325708', url: 'https://example.com' }],
      },
    })
    const group = {
      ...image,
      source: { type: 'group', groupId: 'Ca56f94637cc4347f90a25382909b24b9' },
    }
    expect(await fixture(group)).toMatchObject({
      draft: { sender: { externalId: 'group:Ca56f94637cc4347f90a25382909b24b9' } },
    })
  })

  it('a postback (a button press): a row carrying its data and what was picked', async () => {
    const postback = {
      ...base,
      type: 'postback',
      source: user,
      postback: {
        data: 'action=buyItem&itemId=123123&color=red',
        params: { datetime: '2017-12-25T01:00' },
      },
    }
    expect(await fixture(postback)).toMatchObject({
      action: 'forward',
      draft: {
        kind: 'message',
        messageKey: 'U123:postback:testwebhookeventid',
        body: 'action=buyItem&itemId=123123&color=red\n2017-12-25T01:00',
      },
    })
  })

  it('an event type no SDK knows yet, with a field of its own: kept whole, not answered "ignored"', async () => {
    const novel = {
      type: 'undefined',
      mode: 'active',
      timestamp: 1462629479859,
      source: user,
      webhookEventId: 'testwebhookeventid',
      deliveryContext: { isRedelivery: true },
      undefinedField: { '1': 1 },
    }
    expect(await fixture(novel)).toEqual({
      action: 'unrecognized',
      reason: 'line_type_undefined',
      payload: JSON.stringify({ destination: 'U123', events: [novel] }),
    })
  })
})
