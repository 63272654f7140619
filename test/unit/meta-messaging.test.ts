/**
 * Messenger and Instagram (the Messenger Platform's webhook events): what each event becomes,
 * its keys, kind and attachments, or why it is acknowledged and not stored; and their settings.
 * The signature and handshake are WhatsApp Cloud's (meta-webhook.ts, test/unit/whatsapp-cloud.test.ts).
 */
import { describe, expect, it } from 'vitest'
import {
  META_PAGE,
  META_USER,
  messagingBody,
  messagingEvent,
  messagingText,
  metaMid,
} from '../../local/vendor-deliveries'
import { instagram } from '../../worker/channels/instagram'
import { messenger } from '../../worker/channels/messenger'
import { MAX_MESSAGING_ITEMS } from '../../worker/channels/meta-messaging'
import type { ChannelDelivery, Classified } from '../../worker/channels/types'
import { parseSettings } from '../../worker/config'
import type { Env } from '../../worker/env'
import { InvalidPayloadError } from '../../worker/errors'

const items = (classified: Classified): readonly ChannelDelivery[] =>
  Array.isArray(classified) ? classified : [classified as ChannelDelivery]
const page = (...messaging: unknown[]) =>
  items(messenger.classify(messagingBody('page', [{ messaging }]), null) as Classified)
const ig = (...messaging: unknown[]) =>
  items(instagram.classify(messagingBody('instagram', [{ messaging }]), null) as Classified)

describe('a message', () => {
  it('Messenger: keyed by mid under the Page, the sender its PSID', () => {
    const [item] = page(messagingText('m_AG5Hz2Uq7tuwNEhXfYYKj8mJEM', 'hello, world!'))
    expect(item).toEqual({
      action: 'forward',
      key: { namespace: 'messenger', scope: META_PAGE, id: 'm_AG5Hz2Uq7tuwNEhXfYYKj8mJEM' },
      draft: {
        kind: 'message',
        channel: 'messenger',
        tenant: META_PAGE,
        deliveryKey: `dedup:messenger:${META_PAGE}:m_AG5Hz2Uq7tuwNEhXfYYKj8mJEM`,
        messageKey: `${META_PAGE}:m_AG5Hz2Uq7tuwNEhXfYYKj8mJEM`,
        sender: { externalId: META_USER },
        body: 'hello, world!',
        occurredAt: '2016-03-23T00:25:52.478Z',
      },
    })
  })

  it('Instagram: the same shape, its own channel and namespace; base64 mids (`=`) are keys', () => {
    const mid =
      'aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQxNDAxNjc0NzM3NzA4OjM0MDI4MjM2Njg0MTcxMDMwMDk0OTEyODE5ODY1OTUwMzMzMzc3MzozMTY2ODY5MzA4MjI5NjE5MDU4NTQ2MDQxNjA3NzA4MTYwMAZDZD='
    const [item] = ig(messagingText(mid, 'hi'))
    expect(item).toMatchObject({
      key: { namespace: 'instagram', scope: META_PAGE, id: mid },
      draft: { channel: 'instagram', messageKey: `${META_PAGE}:${mid}` },
    })
  })

  it('a standby copy (the handover protocol) has the same keys as the message', () => {
    const mid = metaMid()
    const [active, standby] = items(
      messenger.classify(
        messagingBody('page', [
          { messaging: [messagingText(mid, 'x')] },
          { standby: [messagingText(mid, 'x')] },
        ]),
        null,
      ) as Classified,
    )
    expect(standby).toEqual(active)
  })

  it("the Page's own messages (is_echo) are no inbound message", () => {
    const echo = messagingEvent(
      { message: { mid: metaMid(), text: 'our reply', is_echo: true, app_id: 1517776481860111 } },
      { sender: META_PAGE, recipient: META_USER },
    )
    expect(page(echo)).toEqual([{ action: 'ignore', reason: 'messenger_echo' }])
    expect(ig(echo)).toEqual([{ action: 'ignore', reason: 'instagram_echo' }])
  })

  it('attachments: media by URL, a sticker by its id, a location by its coordinates', () => {
    const url = 'https://scontent.xx.fbcdn.net/v/t1.15752-9/image.png'
    const message = {
      mid: metaMid(),
      attachments: [
        { type: 'image', payload: { url } },
        { type: 'image', payload: { url, sticker_id: 369239263222822 } },
        { type: 'file', payload: { url: 'https://cdn.example/f.pdf' } },
        { type: 'location', payload: { coordinates: { lat: 52.5, long: 13.4 } } },
        { type: 'template', payload: { template_type: 'generic' } },
      ],
    }
    const [item] = page(messagingEvent({ message }))
    expect(item).toMatchObject({
      draft: {
        body: '',
        attachments: [
          { kind: 'image', url },
          { kind: 'sticker', mediaId: '369239263222822', url },
          { kind: 'file', url: 'https://cdn.example/f.pdf' },
          { kind: 'location', content: { latitude: 52.5, longitude: 13.4 } },
        ],
      },
    })
    const empty = { mid: metaMid(), attachments: [{ type: 'fallback', payload: null }] }
    expect(page(messagingEvent({ message: empty }))).toEqual([
      { action: 'ignore', reason: 'messenger_message_empty' },
    ])
  })
})

describe('edits and deletes', () => {
  it('message_edit: an edit under the message key, num_edit its sequence', () => {
    const mid = metaMid()
    const edit = messagingEvent(
      { message_edit: { mid, text: 'fixed typo', num_edit: 2 } },
      { timestamp: 1_700_000_000_000 },
    )
    expect(page(edit)).toEqual([
      {
        action: 'forward',
        key: { namespace: 'messenger-edit', scope: META_PAGE, id: `${mid}:2` },
        draft: expect.objectContaining({
          kind: 'edit',
          messageKey: `${META_PAGE}:${mid}`,
          body: 'fixed typo',
          editSeq: 2,
          occurredAt: '2023-11-14T22:13:20.000Z',
        }),
      },
    ])
  })

  it('Instagram is_deleted: a delete under the message key', () => {
    const mid = metaMid()
    expect(ig(messagingEvent({ message: { mid, is_deleted: true } }))).toEqual([
      {
        action: 'forward',
        key: { namespace: 'instagram-delete', scope: META_PAGE, id: mid },
        draft: expect.objectContaining({
          kind: 'delete',
          body: '',
          messageKey: `${META_PAGE}:${mid}`,
        }),
      },
    ])
  })
})

describe('reads, deliveries and reactions: recorded, never rows', () => {
  it('each in the status namespace, keyed by what it is about', () => {
    const mid = metaMid()
    const events = [
      messagingEvent({ read: { watermark: 1458668856253 } }),
      messagingEvent({ read: { mid } }),
      messagingEvent({ delivery: { mids: [mid], watermark: 1458668856253 } }),
      messagingEvent({ reaction: { mid, action: 'react', reaction: 'love', emoji: '❤' } }),
      messagingEvent({ reaction: { mid, action: 'unreact' } }),
    ]
    expect(page(...events).map((item) => item.action === 'record' && item.key.id)).toEqual([
      `read:${META_USER}:1458668856253`,
      `read:${META_USER}:${mid}`,
      `delivery:${META_USER}:1458668856253`,
      `reaction:${META_USER}:${mid}:react:love`,
      `reaction:${META_USER}:${mid}:unreact:none`,
    ])
    expect(
      page(...events).every(
        (item) => item.action === 'record' && item.key.namespace === 'messenger-status',
      ),
    ).toBe(true)
  })

  it('postbacks and other events: acknowledged, not stored', () => {
    const postback = messagingEvent({ postback: { mid: metaMid(), title: 'Yes', payload: 'YES' } })
    expect(page(postback)).toEqual([{ action: 'ignore', reason: 'messenger_event_other' }])
  })
})

describe('the batch', () => {
  it('another object, no entries, or an entry without a numeric id: acknowledged, never guessed at', () => {
    expect(
      messenger.classify(
        messagingBody('instagram', [{ messaging: [messagingText(metaMid(), 'x')] }]),
        null,
      ),
    ).toEqual({
      action: 'ignore',
      reason: 'messenger_other_object',
    })
    expect(messenger.classify(messagingBody('page', []), null)).toEqual({
      action: 'ignore',
      reason: 'messenger_no_events',
    })
    expect(
      items(
        messenger.classify(
          messagingBody('page', [{ id: 'x', messaging: [messagingText(metaMid(), 'x')] }]),
          null,
        ) as Classified,
      ),
    ).toEqual([{ action: 'ignore', reason: 'messenger_entry_without_id' }])
  })

  it(`more than ${MAX_MESSAGING_ITEMS} items: refused`, () => {
    const entries = Array.from({ length: MAX_MESSAGING_ITEMS + 1 }, () => ({
      messaging: [messagingText(metaMid(), 'x')],
    }))
    expect(() => messenger.classify(messagingBody('page', entries), null)).toThrow(
      InvalidPayloadError,
    )
  })
})

describe('the settings', () => {
  const env = (vars: Partial<Env>) =>
    parseSettings({
      ORIGIN_URL: 'http://127.0.0.1:8788',
      ORIGIN_SHARED_SECRET: 'o',
      ...vars,
    } as Env)

  it('each channel its own variables; several apps need the account ids each writes for', () => {
    expect(env({ MESSENGER_APP_SECRET: 's', MESSENGER_VERIFY_TOKEN: 'v' }).messenger.ok).toBe(true)
    expect(env({ MESSENGER_APP_SECRET: 's' }).messenger).toEqual({
      ok: false,
      missing: ['MESSENGER_VERIFY_TOKEN'],
    })
    const apps = env({
      INSTAGRAM_APP_SECRETS_BY_APP: '111=a,222=b',
      INSTAGRAM_VERIFY_TOKEN: 'v',
    })
    expect(apps.instagram).toEqual({ ok: false, missing: ['INSTAGRAM_ACCOUNTS_BY_APP'] })
    expect(apps.messenger.ok).toBe(false)
  })

  it("Meta retries for 36 hours: a TTL of 48; Meta's 3 MB body bound; own event channels", () => {
    const s = env({})
    expect(s.dedupTtlByChannel.messenger).toBe(48 * 3_600)
    expect(s.dedupTtlByChannel.instagram).toBe(48 * 3_600)
    expect([messenger.maxBodyBytes, instagram.maxBodyBytes]).toEqual([
      3 * 1024 * 1024,
      3 * 1024 * 1024,
    ])
    expect([messenger.eventChannels, instagram.eventChannels]).toEqual([
      ['messenger'],
      ['instagram'],
    ])
    expect([messenger.paths, instagram.paths]).toEqual([['/messenger'], ['/instagram']])
  })
})
