/**
 * Messenger and Instagram (the Messenger Platform's webhook events): what each event becomes,
 * its keys, kind and attachments, or why it is acknowledged and not stored; and their settings.
 * The signature and handshake are WhatsApp Cloud's (meta-webhook.ts,
 * test/channels/whatsapp-cloud/whatsapp-cloud.test.ts).
 */
import { describe, expect, it } from 'vitest'
import {
  META_PAGE,
  META_USER,
  messagingBody,
  messagingEvent,
  messagingText,
  metaMid,
} from '../../../local/vendor-deliveries'
import { instagram } from '../../../worker/channels/instagram'
import { messenger } from '../../../worker/channels/messenger'
import { MAX_MESSAGING_ITEMS } from '../../../worker/channels/meta-messaging'
import type { Classified } from '../../../worker/channels/types'
import { parseSettings } from '../../../worker/config'
import type { Env } from '../../../worker/env'
import { InvalidPayloadError } from '../../../worker/errors'
import { items } from '../support/drafts'

const page = async (...messaging: unknown[]) =>
  items(await messenger.classify(messagingBody('page', [{ messaging }]), null))
const ig = async (...messaging: unknown[]) =>
  items(await instagram.classify(messagingBody('instagram', [{ messaging }]), null))

describe('a message', () => {
  it('Messenger: keyed by mid under the Page, the sender its PSID', async () => {
    const [item] = await page(messagingText('m_AG5Hz2Uq7tuwNEhXfYYKj8mJEM', 'hello, world!'))
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

  it('Instagram: the same shape, its own channel and namespace; base64 mids (`=`) are keys', async () => {
    const mid =
      'aWdfZAG1faXRlbToxOklHTWVzc2FnZAUlEOjE3ODQxNDAxNjc0NzM3NzA4OjM0MDI4MjM2Njg0MTcxMDMwMDk0OTEyODE5ODY1OTUwMzMzMzc3MzozMTY2ODY5MzA4MjI5NjE5MDU4NTQ2MDQxNjA3NzA4MTYwMAZDZD='
    const [item] = await ig(messagingText(mid, 'hi'))
    expect(item).toMatchObject({
      key: { namespace: 'instagram', scope: META_PAGE, id: mid },
      draft: { channel: 'instagram', messageKey: `${META_PAGE}:${mid}` },
    })
  })

  it('a standby copy (the handover protocol) has the same keys as the message', async () => {
    const mid = metaMid()
    const [active, standby] = items(
      (await messenger.classify(
        messagingBody('page', [
          { messaging: [messagingText(mid, 'x')] },
          { standby: [messagingText(mid, 'x')] },
        ]),
        null,
      )) as Classified,
    )
    expect(standby).toEqual(active)
  })

  it("the Page's own messages (is_echo) are no inbound message", async () => {
    const echo = messagingEvent(
      { message: { mid: metaMid(), text: 'our reply', is_echo: true, app_id: 1517776481860111 } },
      { sender: META_PAGE, recipient: META_USER },
    )
    expect(await page(echo)).toEqual([{ action: 'ignore', reason: 'messenger_echo' }])
    expect(await ig(echo)).toEqual([{ action: 'ignore', reason: 'instagram_echo' }])
  })

  it('attachments: media by URL, a sticker by its id, a location by its coordinates', async () => {
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
    const [item] = await page(messagingEvent({ message }))
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
    // Nothing to show of it: kept as unrecognized (its own envelope, to classify again), no row.
    const empty = { mid: metaMid(), attachments: [{ type: 'fallback', payload: null }] }
    const [kept] = await page(messagingEvent({ message: empty }))
    expect(kept).toMatchObject({ action: 'unrecognized', reason: 'messenger_message_empty' })
    const payload = JSON.parse((kept as { payload: string }).payload)
    expect(payload).toMatchObject({ object: 'page', entry: [{ id: META_PAGE }] })
    expect(payload.entry[0].messaging[0].message).toEqual(empty)
  })

  // nyaruka/courier handlers/meta/testdata/fba/fallback.json and fba/reel.json,
  // ig/story_mention.json @ 350e935007fd7e7cab689feee5ce97e326d49099 (captured Meta payloads):
  // each was answered "ignored" (message_empty); each carries what the person sent.
  it('a share, a reel, a story mention: a row with a document (or video) of its URL and title', async () => {
    const fallback = {
      mid: metaMid(),
      attachments: [{ type: 'fallback', payload: { url: 'My Documents/foo.doc', title: 'Foo' } }],
    }
    const reel = {
      mid: metaMid(),
      attachments: [
        {
          type: 'ig_reel',
          payload: { url: '/reel/123451234512345/', reel_video_id: 123451234512345 },
        },
      ],
    }
    const story = {
      mid: metaMid(),
      attachments: [{ type: 'story_mention', payload: { url: 'https://story-url' } }],
    }
    const [a] = await page(messagingEvent({ message: fallback }))
    const [b] = await page(messagingEvent({ message: reel }))
    const [c] = await ig(messagingEvent({ message: story }))
    expect(a).toMatchObject({
      action: 'forward',
      draft: {
        body: '',
        attachments: [
          {
            kind: 'document',
            url: 'My Documents/foo.doc',
            caption: 'Foo',
            content: { type: 'fallback' },
          },
        ],
      },
    })
    expect(b).toMatchObject({
      draft: { attachments: [{ kind: 'video', url: '/reel/123451234512345/' }] },
    })
    expect(c).toMatchObject({
      draft: { attachments: [{ kind: 'document', url: 'https://story-url' }] },
    })
  })
})

describe('edits and deletes', () => {
  it('message_edit: an edit under the message key, num_edit its sequence', async () => {
    const mid = metaMid()
    const edit = messagingEvent(
      { message_edit: { mid, text: 'fixed typo', num_edit: 2 } },
      { timestamp: 1_700_000_000_000 },
    )
    expect(await page(edit)).toEqual([
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

  it('Instagram is_deleted: a delete under the message key', async () => {
    const mid = metaMid()
    expect(await ig(messagingEvent({ message: { mid, is_deleted: true } }))).toEqual([
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
  it('each in the status namespace, keyed by what it is about', async () => {
    const mid = metaMid()
    const events = [
      messagingEvent({ read: { watermark: 1458668856253 } }),
      messagingEvent({ read: { mid } }),
      messagingEvent({ delivery: { mids: [mid], watermark: 1458668856253 } }),
      messagingEvent({ reaction: { mid, action: 'react', reaction: 'love', emoji: '❤' } }),
      messagingEvent({ reaction: { mid, action: 'unreact' } }),
    ]
    expect((await page(...events)).map((item) => item.action === 'record' && item.key.id)).toEqual([
      `read:${META_USER}:1458668856253`,
      `read:${META_USER}:${mid}`,
      `delivery:${META_USER}:1458668856253`,
      `reaction:${META_USER}:${mid}:react:love`,
      `reaction:${META_USER}:${mid}:unreact:none`,
    ])
    expect(
      (await page(...events)).every(
        (item) => item.action === 'record' && item.key.namespace === 'messenger-status',
      ),
    ).toBe(true)
  })

  // Meta's messaging_postbacks reference prints `"mid":"m_1457764197618:41d102a3e1ae206a38"`
  // (https://developers.facebook.com/docs/messenger-platform/reference/webhook-events/messaging_postbacks);
  // nyaruka/courier handlers/meta/testdata/fba/postback.json and ig/icebreaker_get_started.json
  // @ 350e935007fd7e7cab689feee5ce97e326d49099 have none (older Graph API versions).
  it('a postback is a button press: a row carrying its title, keyed by its mid (or sender and time)', async () => {
    const withMid = messagingEvent({
      postback: {
        mid: 'm_1457764197618:41d102a3e1ae206a38',
        title: 'TITLE-FOR-THE-CTA',
        payload: 'USER-DEFINED-PAYLOAD',
      },
    })
    expect(await page(withMid)).toEqual([
      {
        action: 'forward',
        key: {
          namespace: 'messenger',
          scope: META_PAGE,
          id: 'm_1457764197618%3A41d102a3e1ae206a38',
        },
        draft: {
          kind: 'message',
          channel: 'messenger',
          tenant: META_PAGE,
          deliveryKey: `dedup:messenger:${META_PAGE}:m_1457764197618%3A41d102a3e1ae206a38`,
          messageKey: `${META_PAGE}:m_1457764197618:41d102a3e1ae206a38`,
          sender: { externalId: META_USER },
          body: 'TITLE-FOR-THE-CTA',
          occurredAt: '2016-03-23T00:25:52.478Z',
        },
      },
    ])
    const old = messagingEvent(
      { postback: { title: 'icebreaker question', payload: 'get_started' } },
      { timestamp: 1459991487970 },
    )
    const [press] = await ig(old)
    expect(press).toMatchObject({
      action: 'forward',
      draft: {
        body: 'icebreaker question',
        messageKey: `${META_PAGE}:postback:${META_USER}:1459991487970`,
      },
    })
    // Only its payload (an app's own postback without a title): the payload is what was pressed.
    const [bare] = await page(messagingEvent({ postback: { payload: 'GET_STARTED' } }))
    expect(bare).toMatchObject({ draft: { body: 'GET_STARTED' } })
  })

  it('documented non-message events are answered with nothing kept; an unknown one is kept whole', async () => {
    const optin = messagingEvent({ optin: { ref: 'x' } })
    const handover = messagingEvent({ pass_thread_control: { new_owner_app_id: '1' } })
    expect(await page(optin, handover)).toEqual([
      { action: 'ignore', reason: 'messenger_optin' },
      { action: 'ignore', reason: 'messenger_pass_thread_control' },
    ])
    // A field of a kind this code does not know, with what a person wrote in it.
    const novel = messagingEvent({ message_feedback_v2: { text: 'great service' } })
    const [kept] = await page(novel)
    expect(kept).toMatchObject({ action: 'unrecognized', reason: 'messenger_event_other' })
    expect(JSON.parse((kept as { payload: string }).payload).entry[0].messaging[0]).toEqual(novel)
  })
})

describe('the batch', () => {
  it('another object, or an entry without an id: kept as unrecognized; no entries: ignored', async () => {
    expect(
      await messenger.classify(
        messagingBody('instagram', [{ messaging: [messagingText(metaMid(), 'x')] }]),
        null,
      ),
    ).toEqual({ action: 'unrecognized', reason: 'messenger_other_object' })
    expect(await messenger.classify(messagingBody('page', []), null)).toEqual({
      action: 'ignore',
      reason: 'messenger_no_events',
    })
    const body = { object: 'page', entry: [{ messaging: [messagingText(metaMid(), 'x')] }] }
    expect(items(await messenger.classify(body, null))).toMatchObject([
      { action: 'unrecognized', reason: 'messenger_entry_without_id' },
    ])
  })

  it(`more than ${MAX_MESSAGING_ITEMS} items: refused`, async () => {
    const entries = Array.from({ length: MAX_MESSAGING_ITEMS + 1 }, () => ({
      messaging: [messagingText(metaMid(), 'x')],
    }))
    await expect(messenger.classify(messagingBody('page', entries), null)).rejects.toThrow(
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

  it('each channel its own variables; several apps need the account ids each writes for', async () => {
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

  it("Meta retries for 36 hours: a TTL of 48; Meta's 3 MB body bound; own event channels", async () => {
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

describe("Meta's message ids, in every form its reference and real payloads print", () => {
  // `mid.1457764197618:41d102a3e1ae206a38`: Meta's messages example, as kept in the fbmessenger-api
  // package's test file (https://hackage.haskell.org/package/fbmessenger-api-0.1.1.0/src/test-files/wsTextMessageRequest.json);
  // `m_1457764197618:41d102a3e1ae206a38`: Meta's messaging_postbacks reference
  // (https://developers.facebook.com/docs/messenger-platform/reference/webhook-events/messaging_postbacks);
  // `mid.$cAAD5QiNHkz1m6cyj11guxokwkhi2`: a captured payload in nyaruka/courier
  // handlers/meta/handlers.go @ 350e935007fd7e7cab689feee5ce97e326d49099. Each was refused by a
  // spelling pattern (`:` and `$`) and answered "ignored": the message and its edits were lost.
  const forms = [
    'mid.1457764197618:41d102a3e1ae206a38',
    'm_1457764197618:41d102a3e1ae206a38',
    'mid.$cAAD5QiNHkz1m6cyj11guxokwkhi2',
  ]

  it.each(forms)(
    '%s: a row keyed by the id as Meta sends it, and its edit under the same key',
    async (mid) => {
      const [message] = await page(messagingText(mid, 'hello, world!'))
      expect(message).toMatchObject({
        action: 'forward',
        draft: { kind: 'message', messageKey: `${META_PAGE}:${mid}`, body: 'hello, world!' },
      })
      const [edit] = await page(
        messagingEvent({ message_edit: { mid, text: 'fixed', num_edit: 1 } }),
      )
      expect(edit).toMatchObject({
        action: 'forward',
        draft: { kind: 'edit', messageKey: `${META_PAGE}:${mid}` },
      })
      // In the Redis key the id is one part: its `:` and `$` written as %XX, never a separator.
      const key = (message as { draft: { deliveryKey: string } }).draft.deliveryKey
      expect(key.split(':')).toHaveLength(4)
      expect(decodeURIComponent(key.split(':')[3] ?? '')).toBe(mid)
    },
  )

  it('an id of any spelling within the bound is kept; past the bound, kept as unrecognized, never dropped', async () => {
    const [odd] = await page(messagingText('mid.ñ€ 😀\u0001:x', 'hi'))
    expect(odd).toMatchObject({
      action: 'forward',
      draft: { messageKey: `${META_PAGE}:mid.ñ€ 😀\u0001:x` },
    })
    const [long] = await page(messagingText(`m_${'a'.repeat(500)}`, 'hi'))
    expect(long).toMatchObject({ action: 'unrecognized', reason: 'messenger_message_without_id' })
  })
})

describe("the Page's own messages and edits", () => {
  it('a message_edit by the Page itself (its echo) is no row with the Page as the customer', async () => {
    // Meta's message_edits reference: sender the Page-scoped id of whoever edited; the Page
    // editing its own message sends the Page's id (https://developers.facebook.com/docs/messenger-platform/reference/webhook-events/message-edits).
    const own = messagingEvent(
      { message_edit: { mid: metaMid(), text: 'our corrected reply', num_edit: 1 } },
      { sender: META_PAGE, recipient: META_USER },
    )
    expect(await page(own)).toEqual([{ action: 'ignore', reason: 'messenger_echo_edit' }])
    const flagged = messagingEvent({
      message_edit: { mid: metaMid(), text: 'x', num_edit: 1, is_echo: true },
    })
    expect(await page(flagged)).toEqual([{ action: 'ignore', reason: 'messenger_echo_edit' }])
  })
})
