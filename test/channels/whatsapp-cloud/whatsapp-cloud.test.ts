/**
 * The WhatsApp Cloud channel's pure parts: the signature against the documented vectors (Meta's
 * own SDK vector among them), verification per app, the handshake, the settings, and what each
 * documented message type and status becomes.
 */
import { describe, expect, it } from 'vitest'
import { partsOf, waBatch, waRequest, waText } from '../../../local/vendor-deliveries'
import { utf8 } from '../../../shared/crypto'
import {
  classifyWhatsAppCloud,
  MAX_BATCH_ITEMS,
  verifyHandshake,
  verifyWhatsAppCloud,
  whatsappCloud,
  whatsappSignature,
} from '../../../worker/channels/whatsapp-cloud'
import { parseSettings } from '../../../worker/config'
import type { Env } from '../../../worker/env'
import { items } from '../support/drafts'
import {
  META_IMAGE_MESSAGE,
  META_SENT_STATUS,
  META_TEXT_EXAMPLE,
  WA_VECTORS,
} from './whatsapp-cloud-fixtures'

const URL_ = 'https://gateway.test/webhooks/whatsapp-cloud'
const one = async (message: Record<string, unknown>, phoneNumberId = '1001') =>
  items(await classifyWhatsAppCloud(waBatch([{ phoneNumberId, messages: [message] }])))[0]

describe('X-Hub-Signature-256', () => {
  it.each(WA_VECTORS)('vector %s', async (_name, secret, body, expected) => {
    expect(await whatsappSignature(secret, body)).toBe(expected)
    expect(await whatsappSignature(secret, utf8(body))).toBe(expected)
  })

  it("vector B's body is Meta's example, 499 bytes", async () => {
    expect(utf8(META_TEXT_EXAMPLE).byteLength).toBe(499)
  })

  const shared = { appSecrets: { kind: 'shared' as const, secrets: ['old', 'my_app_secret_123'] } }
  const config = { ...shared, phoneNumbers: new Map() }

  it('verifies the exact bytes under any secret of the rotation list', async () => {
    const request = await waRequest(URL_, META_TEXT_EXAMPLE, 'my_app_secret_123')
    expect(await verifyWhatsAppCloud(await partsOf(request), config)).toEqual({
      ok: true,
      tenant: null,
    })
  })

  it('refuses a missing, foreign-version, wrong or re-serialised signature', async () => {
    const good = await waRequest(URL_, '{"text":{"body":"\\u00e4\\u00f6\\u00e5"}}', 'old')
    const parts = await partsOf(good)
    const header = parts.headers.get('x-hub-signature-256') as string
    const reserialised = {
      ...parts,
      body: { ...parts.body, bytes: utf8('{"text":{"body":"äöå"}}') },
    }
    expect(await verifyWhatsAppCloud(reserialised, config)).toMatchObject({ ok: false })
    const without = new Headers()
    expect(await verifyWhatsAppCloud({ ...parts, headers: without }, config)).toEqual({
      ok: false,
      reason: 'missing_headers',
    })
    const sha1 = new Headers({ 'x-hub-signature-256': header.replace('sha256=', 'sha1=') })
    expect(await verifyWhatsAppCloud({ ...parts, headers: sha1 }, config)).toEqual({
      ok: false,
      reason: 'unknown_signature_version',
    })
    const upper = new Headers({ 'x-hub-signature-256': header.toUpperCase() })
    expect(await verifyWhatsAppCloud({ ...parts, headers: upper }, config)).toMatchObject({
      ok: true,
    })
  })

  it('with several apps, the app whose secret matched is the tenant and its numbers the scopes', async () => {
    const perApp = {
      appSecrets: {
        kind: 'per-tenant' as const,
        byTenant: new Map([
          ['111', ['secret-one']],
          ['222', ['secret-two', 'secret-two-old']],
        ]),
      },
      phoneNumbers: new Map([
        ['111', new Set(['1001'])],
        ['222', new Set(['2001', '2002'])],
      ]),
    }
    const request = await waRequest(URL_, META_TEXT_EXAMPLE, 'secret-two-old')
    expect(await verifyWhatsAppCloud(await partsOf(request), perApp)).toEqual({
      ok: true,
      tenant: '222',
      scopes: new Set(['2001', '2002']),
    })
    const stranger = await waRequest(URL_, META_TEXT_EXAMPLE, 'not-configured')
    expect(await verifyWhatsAppCloud(await partsOf(stranger), perApp)).toMatchObject({ ok: false })
  })
})

describe('the GET handshake', () => {
  const query = (mode: string, token: string, challenge = '1158201444') =>
    new URLSearchParams({ 'hub.mode': mode, 'hub.verify_token': token, 'hub.challenge': challenge })

  it('echoes the challenge for subscribe with a configured token, else refuses', async () => {
    expect(verifyHandshake(query('subscribe', 'b'), ['a', 'b'])).toEqual({
      ok: true,
      challenge: '1158201444',
    })
    expect(verifyHandshake(query('subscribe', 'c'), ['a', 'b'])).toMatchObject({ ok: false })
    expect(verifyHandshake(query('unsubscribe', 'a'), ['a'])).toMatchObject({ ok: false })
    expect(verifyHandshake(new URLSearchParams(), ['a'])).toMatchObject({ ok: false })
    expect(verifyHandshake(query('subscribe', 'a', 'x'.repeat(300)), ['a'])).toMatchObject({
      ok: false,
    })
  })
})

describe('settings', () => {
  const base: Env = { ORIGIN_URL: 'http://127.0.0.1:8788', ORIGIN_SHARED_SECRET: 'o' }

  it('needs an app secret and a verify token; by app, also the phone numbers', async () => {
    expect(parseSettings(base)['whatsapp-cloud']).toEqual({
      ok: false,
      missing: ['WHATSAPP_APP_SECRET (or WHATSAPP_APP_SECRETS_BY_APP)', 'WHATSAPP_VERIFY_TOKEN'],
    })
    const byApp = { ...base, WHATSAPP_APP_SECRETS_BY_APP: '111=s', WHATSAPP_VERIFY_TOKEN: 'v' }
    expect(parseSettings(byApp)['whatsapp-cloud']).toEqual({
      ok: false,
      missing: ['WHATSAPP_PHONE_NUMBERS_BY_APP'],
    })
    const ready = parseSettings({ ...byApp, WHATSAPP_PHONE_NUMBERS_BY_APP: '111=1001|1002' })
    expect(ready['whatsapp-cloud']).toMatchObject({ ok: true })
  })

  it('warns about a bad phone number list in its own words (phone_number_ids, not secrets)', async () => {
    const byApp = { ...base, WHATSAPP_APP_SECRETS_BY_APP: '111=s', WHATSAPP_VERIFY_TOKEN: 'v' }
    const s = parseSettings({ ...byApp, WHATSAPP_PHONE_NUMBERS_BY_APP: '1001,111=,111=x1|1002' })
    expect(s.warnings.filter((w) => w.startsWith('WHATSAPP_PHONE_NUMBERS_BY_APP'))).toEqual([
      'WHATSAPP_PHONE_NUMBERS_BY_APP entry 1 is not TENANT=phone_number_id1|phone_number_id2 with TENANT a numeric Meta id; skipped',
      'WHATSAPP_PHONE_NUMBERS_BY_APP entry 2 (111) has no phone_number_id; skipped',
      'WHATSAPP_PHONE_NUMBERS_BY_APP entry 3 (111) has a phone_number_id the vendor would not accept',
    ])
  })

  it("its dedup TTL covers Meta's 7 days of retries, and its own variable overrides it", async () => {
    expect(parseSettings(base).dedupTtlByChannel['whatsapp-cloud']).toBe(8 * 86_400)
    expect(whatsappCloud.dedupTtl.horizonSeconds).toBeGreaterThan(7 * 86_400)
    const own = parseSettings({ ...base, DEDUP_TTL_SECONDS_WHATSAPP_CLOUD: '3600' } as Env)
    expect(own.dedupTtlByChannel['whatsapp-cloud']).toBe(3600)
    expect(own.dedupTtlByChannel.slack).toBe(86_400)
  })
})

describe('classify', () => {
  it("Meta's text example: keys scoped by the phone number id, the profile name, the time", async () => {
    expect(items(await classifyWhatsAppCloud(JSON.parse(META_TEXT_EXAMPLE)))).toEqual([
      {
        action: 'forward',
        key: {
          namespace: 'wa-cloud',
          scope: '106540352242922',
          id: 'wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
        },
        draft: {
          kind: 'message',
          channel: 'whatsapp',
          tenant: '106540352242922',
          deliveryKey:
            'dedup:wa-cloud:106540352242922:wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
          messageKey:
            '106540352242922:wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=',
          sender: { externalId: '16505551234', displayName: 'Sheena Nelson' },
          body: 'Does it come in another color?',
          occurredAt: '2025-06-08T20:59:43.000Z',
        },
      },
    ])
  })

  it('a batch: 3 messages on 2 numbers are 3 deliveries, each with its own keys', async () => {
    const batch = waBatch([
      { phoneNumberId: '1001', messages: [waText('wamid.A', 'a'), waText('wamid.B', 'b')] },
      { phoneNumberId: '2002', messages: [waText('wamid.A', 'same wamid, other number')] },
    ])
    const keys = items(await classifyWhatsAppCloud(batch)).map((d) =>
      d.action === 'forward' ? d.draft.deliveryKey : d.action,
    )
    expect(keys).toEqual([
      'dedup:wa-cloud:1001:wamid.A',
      'dedup:wa-cloud:1001:wamid.B',
      'dedup:wa-cloud:2002:wamid.A',
    ])
  })

  it("Meta's image example: the caption is the body, the media an attachment", async () => {
    expect(await one(META_IMAGE_MESSAGE)).toMatchObject({
      draft: {
        body: 'Taj Mahal',
        attachments: [
          {
            kind: 'image',
            mediaId: '1003383421387256',
            mimeType: 'image/jpeg',
            caption: 'Taj Mahal',
            url: 'https://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=133...',
          },
        ],
      },
    })
  })

  it.each([
    [
      'document',
      { id: 'm1', mime_type: 'application/pdf', filename: 'a.pdf', caption: 'c' },
      { kind: 'document', fileName: 'a.pdf', caption: 'c' },
    ],
    [
      'audio',
      { id: 'm2', mime_type: 'audio/ogg; codecs=opus', voice: true },
      { kind: 'voice', mediaId: 'm2' },
    ],
    [
      'audio',
      { id: 'm3', mime_type: 'audio/mpeg', voice: false },
      { kind: 'audio', mediaId: 'm3' },
    ],
    ['video', { id: 'm4', mime_type: 'video/mp4' }, { kind: 'video', mediaId: 'm4' }],
    [
      'sticker',
      { id: 'm5', mime_type: 'image/webp', animated: false },
      { kind: 'sticker', mimeType: 'image/webp' },
    ],
  ])('%s media becomes an attachment', async (type, part, attachment) => {
    const delivery = await one({
      from: '1',
      id: `wamid.${type}`,
      timestamp: '1',
      type,
      [type]: part,
    })
    expect(delivery).toMatchObject({ action: 'forward', draft: { attachments: [attachment] } })
  })

  it('location and contacts are structured content', async () => {
    const location = { latitude: 48.85, longitude: 2.35, name: 'Paris', address: 'FR' }
    expect(
      await one({ from: '1', id: 'wamid.L', timestamp: '1', type: 'location', location }),
    ).toMatchObject({
      draft: { body: '', attachments: [{ kind: 'location', content: location }] },
    })
    const contacts = [
      { name: { formatted_name: 'Ada' }, phones: [{ phone: '+1555', wa_id: '1555' }] },
    ]
    expect(
      await one({ from: '1', id: 'wamid.C', timestamp: '1', type: 'contacts', contacts }),
    ).toMatchObject({
      draft: { attachments: [{ kind: 'contacts', content: { contacts } }] },
    })
  })

  it('button and interactive replies are their text; reactions are acknowledged; an unsupported message is kept', async () => {
    const m = (type: string, part: unknown) => ({
      from: '1',
      id: `wamid.${type}`,
      timestamp: '1',
      type,
      [type]: part,
    })
    expect(await one(m('button', { text: 'Yes', payload: 'y' }))).toMatchObject({
      draft: { body: 'Yes' },
    })
    expect(
      await one(m('interactive', { type: 'list_reply', list_reply: { id: '1', title: 'Two' } })),
    ).toMatchObject({ draft: { body: 'Two' } })
    expect(await one(m('reaction', { message_id: 'wamid.x', emoji: '👍' }))).toEqual({
      action: 'ignore',
      reason: 'wa_type_reaction',
    })
    // A customer wrote something the Cloud API does not carry: a message, never merely ignored.
    expect(await one(m('unsupported', { type: 'poll' }))).toMatchObject({
      action: 'unrecognized',
      reason: 'wa_type_unsupported',
    })
    expect(await one(m('unknown', {}))).toMatchObject({
      action: 'unrecognized',
      reason: 'wa_type_unknown',
    })
  })

  it('edit and revoke (Coexistence) change the original message key', async () => {
    const edit = await one({
      from: '1',
      id: 'wamid.E',
      timestamp: '2',
      type: 'edit',
      edit: { original_message_id: 'wamid.O', message: { type: 'text', text: { body: 'fixed' } } },
    })
    expect(edit).toMatchObject({
      key: { id: 'wamid.E' },
      draft: { kind: 'edit', messageKey: '1001:wamid.O', body: 'fixed' },
    })
    const revoke = await one({
      from: '1',
      id: 'wamid.R',
      timestamp: '3',
      type: 'revoke',
      revoke: { original_message_id: 'wamid.O' },
    })
    expect(revoke).toMatchObject({ draft: { kind: 'delete', messageKey: '1001:wamid.O' } })
  })

  it('statuses are recorded in their own namespace, hashed by the status itself', async () => {
    const failed = {
      id: 'wamid.S',
      status: 'failed',
      timestamp: '1',
      recipient_id: '1',
      errors: [{ code: 131049 }],
    }
    const batch = waBatch([{ phoneNumberId: '1001', statuses: [META_SENT_STATUS, failed] }])
    expect(items(await classifyWhatsAppCloud(batch))).toEqual([
      {
        action: 'record',
        key: { namespace: 'wa-cloud-status', scope: '1001', id: `${META_SENT_STATUS.id}:sent` },
        material: JSON.stringify(META_SENT_STATUS),
      },
      {
        action: 'record',
        key: { namespace: 'wa-cloud-status', scope: '1001', id: 'wamid.S:failed:131049' },
        material: JSON.stringify(failed),
      },
    ])
  })

  it('no `from` (a username user): the sender is the business-scoped user id, as Meta sends it', async () => {
    const body = {
      object: 'whatsapp_business_account',
      entry: [
        {
          id: '102290129340398',
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: '15550783881', phone_number_id: '1001' },
                contacts: [
                  {
                    profile: { name: 'Sheena Nelson', username: '@realsheenanelson' },
                    user_id: 'US.13491208655302741918',
                    parent_user_id: 'US.ENT.11815799212886844830',
                  },
                ],
                messages: [
                  {
                    from_user_id: 'US.13491208655302741918',
                    from_parent_user_id: 'US.ENT.11815799212886844830',
                    id: 'wamid.B1',
                    timestamp: '1749416383',
                    type: 'text',
                    text: { body: 'Does it come in another color?' },
                  },
                ],
              },
            },
          ],
        },
      ],
    }
    expect(items(await classifyWhatsAppCloud(body))[0]).toMatchObject({
      action: 'forward',
      draft: {
        messageKey: '1001:wamid.B1',
        sender: { externalId: 'US.13491208655302741918', displayName: 'Sheena Nelson' },
        body: 'Does it come in another color?',
      },
    })
    // With both, the phone number: the id the customer's earlier messages were filed under.
    const both = { ...waText('wamid.B2', 'hi'), from_user_id: 'US.13491208655302741918' }
    expect(await one(both)).toMatchObject({ draft: { sender: { externalId: '16505551234' } } })
    // Neither a phone number nor a BSUID of Meta's shape: nobody to file it under, so it is kept
    // whole (its own envelope, to classify again), never dropped.
    for (const from_user_id of [
      undefined,
      '16505551234',
      'US.with:colon',
      `US.${'1'.repeat(200)}`,
    ]) {
      const message = { ...waText('wamid.B3', 'x'), from: undefined, from_user_id }
      expect(await one(message)).toMatchObject({
        action: 'unrecognized',
        reason: 'wa_message_without_sender',
      })
    }
  })

  it('a wamid of any spelling is kept (one key part); another object is kept; account notices are ignored', async () => {
    expect(
      await one({
        from: '1',
        id: 'wamid:with:colons',
        timestamp: '1',
        type: 'text',
        text: { body: 'x' },
      }),
    ).toMatchObject({
      action: 'forward',
      key: { id: 'wamid%3Awith%3Acolons' },
      draft: { messageKey: '1001:wamid:with:colons' },
    })
    expect(await classifyWhatsAppCloud({ object: 'page', entry: [] })).toEqual({
      action: 'unrecognized',
      reason: 'wa_not_whatsapp_business_account',
    })
    expect(await classifyWhatsAppCloud(waBatch([]))).toEqual({
      action: 'ignore',
      reason: 'wa_no_messages',
    })
    const notice = {
      object: 'whatsapp_business_account',
      entry: [{ id: '1', changes: [{ field: 'account_update', value: {} }] }],
    }
    expect(await classifyWhatsAppCloud(notice)).toEqual([
      { action: 'ignore', reason: 'wa_field_account_update' },
    ])
  })

  it('a message type or change field this code does not know is kept whole, in an envelope of its own', async () => {
    const order = {
      from: '1',
      id: 'wamid.O1',
      timestamp: '1',
      type: 'order',
      order: { catalog_id: '9', product_items: [] },
    }
    const [kept] = items(
      await classifyWhatsAppCloud(
        waBatch([{ phoneNumberId: '1001', messages: [order, waText('wamid.T1', 'hi')] }]),
      ),
    )
    expect(kept).toMatchObject({ action: 'unrecognized', reason: 'wa_type_order' })
    const envelope = JSON.parse((kept as { payload: string }).payload)
    expect(envelope.entry[0].changes[0].value.messages).toEqual([order])
    // Classified again, the envelope is the same one message.
    expect(items(await classifyWhatsAppCloud(envelope))).toMatchObject([
      { action: 'unrecognized', reason: 'wa_type_order' },
    ])
    const history = {
      object: 'whatsapp_business_account',
      entry: [{ id: '1', changes: [{ field: 'history', value: {} }] }],
    }
    // Coexistence's history sync carries past messages: not on the list, so kept.
    expect(await classifyWhatsAppCloud(history)).toMatchObject([
      { action: 'unrecognized', reason: 'wa_field_history' },
    ])
  })
})

describe('the batch bound', () => {
  it(`over ${MAX_BATCH_ITEMS} keyed items is no Meta batch (400); ignored changes do not count`, async () => {
    const messages = (n: number) =>
      Array.from({ length: n }, (_, i) => waText(`wamid.bound${i}`, `m${i}`))
    const full = await classifyWhatsAppCloud(
      waBatch([{ phoneNumberId: '1001', messages: messages(MAX_BATCH_ITEMS) }]),
    )
    expect(items(full)).toHaveLength(MAX_BATCH_ITEMS)
    const over = waBatch([{ phoneNumberId: '1001', messages: messages(MAX_BATCH_ITEMS + 1) }])
    await expect(classifyWhatsAppCloud(over)).rejects.toThrow('whatsapp batch too large')
    // A batch of one message and many changes of other fields: one keyed item, not refused.
    const other = { field: 'account_update', value: {} }
    const noisy = waBatch([{ phoneNumberId: '1001', messages: messages(1) }])
    const entry = (noisy.entry as Array<{ changes: unknown[] }>)[0]
    entry?.changes.push(...Array.from({ length: MAX_BATCH_ITEMS + 5 }, () => other))
    const kept = items(await classifyWhatsAppCloud(noisy)).filter((i) => i.action !== 'ignore')
    expect(kept).toHaveLength(1)
  })
})
