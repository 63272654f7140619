/**
 * Strings Postgres refuses (`text` and `jsonb` hold neither NUL nor a lone UTF-16 surrogate), in
 * every string field a vendor fills, on every channel: through the deployable Worker (Miniflare),
 * the real origin and real Postgres, each delivery is stored once, with NUL removed and a lone
 * surrogate replaced by U+FFFD; a replay that reaches Postgres again is a duplicate of that row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  emailRequest,
  nowSeconds,
  randomHex,
  randomId,
  slackRequest,
  TEST_SECRETS,
  TWILIO_ACCOUNT,
  telegramRequest,
  twilioDeliveryKey,
  twilioRequest,
  uniqueMessageId,
  waBatch,
  waRequest,
} from '../../local/vendor-deliveries'
import * as media from '../channels/support/media-payloads'
import { send, startTestStack, type TestStack } from '../support/test-stack'

/** What vendors may send: a NUL and a lone high surrogate, between ordinary characters. */
const odd = (word: string) => `${word}\u0000-\ud800-end`
/** What the row holds instead. */
const stored = (word: string) => `${word}-\ufffd-end`

let e2e: TestStack
const workerLines: string[] = []

beforeAll(async () => {
  // Without the spool: a refusal by the origin is then visible as a missing row.
  e2e = await startTestStack('e2e-unstorable', {
    workerVars: { SPOOL_CHANNELS: 'none' },
    onWorkerLine: (line) => workerLines.push(line),
  })
}, 180_000)

afterAll(async () => {
  await e2e?.stop()
})

async function row(channel: string, messageKey: string) {
  const { rows } = await e2e.stack.sql.query(
    `SELECT m.body, u.display_name AS name, m.attachments
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
       JOIN customers u ON u.id = c.customer_id
      WHERE m.channel = $1 AND m.channel_message_id = $2`,
    [channel, messageKey],
  )
  return rows
}

/** The Worker's decision lines for a delivery key, in order. */
function decisions(deliveryKey: string): string[] {
  return workerLines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((l) => l.msg === 'decision' && l.deliveryKey === deliveryKey)
    .map((l) => `${String(l.decision)}/${String(l.decidedBy)}`)
}

/**
 * Delivered, then delivered again without its Redis claim (expired): the second time Postgres
 * answers, and must find the row the first made under the same (storable) key.
 */
async function deliverTwice(request: () => Promise<Request>, deliveryKey: string) {
  expect(await send(await request())).toBe(200)
  await e2e.stack.redisClient.del(`${e2e.stack.keyPrefix}${deliveryKey}`)
  expect(await send(await request())).toBe(200)
  expect(decisions(deliveryKey)).toEqual(['forwarded/redis', 'duplicate/postgres'])
}

describe('strings Postgres cannot hold, stored once with their replacement', () => {
  it('Slack: the text and a file name', async () => {
    const eventId = `Ev${randomId()}`
    const ts = `${nowSeconds()}.${String(Math.floor(Math.random() * 1e6)).padStart(6, '0')}`
    const file = { ...media.SLACK_FILE, name: odd('scan') }
    const share = media.slackFileShare([file], { text: odd('see'), eventId, ts })
    await deliverTwice(
      () => slackRequest(`${e2e.stack.worker.url}/webhooks/slack`, share),
      `dedup:slack:A123ABC456:${eventId}`,
    )
    expect(await row('slack', `T123ABC456:C123ABC456:${ts}`)).toEqual([
      {
        body: stored('see'),
        name: null,
        attachments: [{ ...media.SLACK_FILE_ATTACHMENT, fileName: stored('scan') }],
      },
    ])
  })

  it('Twilio: the text and the profile name (a form body carries no lone surrogate)', async () => {
    const sid = `SM${randomHex(16)}`
    const params = media.twilioMediaParams([['image/jpeg', media.twilioMediaUrl('ME1')]], {
      messageSid: sid,
      body: odd('look'),
    })
    params.push(['ProfileName', odd('Ada')])
    await deliverTwice(
      () => twilioRequest(`${e2e.stack.worker.url}/webhooks/twilio`, params),
      twilioDeliveryKey('wa', sid),
    )
    const [found] = await row('whatsapp', `${TWILIO_ACCOUNT}:${sid}`)
    // URL-encoding turns a lone surrogate into U+FFFD before Twilio's request is even sent.
    expect(found).toMatchObject({ body: stored('look'), name: stored('Ada') })
  })

  it('Telegram: a caption, a file name, the sender’s name, and a contact card', async () => {
    const chatId = Math.floor(Math.random() * 2 ** 40)
    const url = `${e2e.stack.worker.url}/webhooks/telegram`
    const from = { id: chatId, is_bot: false, first_name: odd('Ada') }
    const chat = { id: chatId, type: 'private', first_name: 'Ada' }
    const document = {
      update_id: Math.floor(Math.random() * 2 ** 31),
      message: {
        message_id: 1,
        date: 1700000000,
        chat,
        from,
        caption: odd('invoice'),
        document: { file_id: 'BQAD-doc', file_unique_id: 'AgAD-doc', file_name: odd('inv.pdf') },
      },
    }
    const contact = {
      update_id: Math.floor(Math.random() * 2 ** 31),
      message: {
        message_id: 2,
        date: 1700000001,
        chat,
        from,
        contact: { phone_number: '+4915112345678', first_name: odd('Bob') },
      },
    }
    const bot = TEST_SECRETS.telegramBotId
    for (const update of [document, contact]) {
      await deliverTwice(
        async () => telegramRequest(url, update),
        `dedup:telegram:${bot}:${update.update_id}`,
      )
    }
    expect(await row('telegram', `${bot}:${chatId}:1`)).toEqual([
      {
        body: stored('invoice'),
        name: stored('Ada'),
        attachments: [
          {
            kind: 'document',
            mediaId: 'BQAD-doc',
            fileName: stored('inv.pdf'),
            caption: stored('invoice'),
            content: { file_unique_id: 'AgAD-doc' },
          },
        ],
      },
    ])
    expect(await row('telegram', `${bot}:${chatId}:2`)).toEqual([
      {
        body: '',
        name: stored('Ada'),
        attachments: [
          {
            kind: 'contacts',
            content: { phone_number: '+4915112345678', first_name: stored('Bob') },
          },
        ],
      },
    ])
  })

  it('WhatsApp Cloud: a caption, a file name, the profile name, and a contact card', async () => {
    const phoneNumberId = String(100_000_000_000 + Math.floor(Math.random() * 1e9))
    const wamid = (n: number) => `wamid.${randomHex(12)}${n}`
    const [doc, card] = [wamid(1), wamid(2)]
    const base = { from: '16505551234', timestamp: '1749416383' }
    const body = waBatch([
      {
        phoneNumberId,
        messages: [
          {
            ...base,
            id: doc,
            type: 'document',
            document: {
              id: '1003',
              mime_type: 'application/pdf',
              filename: odd('inv.pdf'),
              caption: odd('invoice'),
            },
          },
          {
            ...base,
            id: card,
            type: 'contacts',
            contacts: [{ name: { formatted_name: odd('Bob') }, phones: [{ phone: '+1 555' }] }],
          },
        ],
      },
    ])
    const batch = body.entry as Array<{ changes: Array<{ value: { contacts: unknown[] } }> }>
    const value = batch[0]?.changes[0]?.value
    if (value) value.contacts = [{ profile: { name: odd('Sheena') }, wa_id: '16505551234' }]
    const request = () => waRequest(`${e2e.stack.worker.url}/webhooks/whatsapp-cloud`, body)
    expect(await send(await request())).toBe(200)
    for (const id of [doc, card]) {
      await e2e.stack.redisClient.del(`${e2e.stack.keyPrefix}dedup:wa-cloud:${phoneNumberId}:${id}`)
    }
    expect(await send(await request())).toBe(200)
    for (const id of [doc, card]) {
      expect(decisions(`dedup:wa-cloud:${phoneNumberId}:${id}`)).toEqual([
        'forwarded/redis',
        'duplicate/postgres',
      ])
    }
    expect(await row('whatsapp', `${phoneNumberId}:${doc}`)).toEqual([
      {
        body: stored('invoice'),
        name: stored('Sheena'),
        attachments: [
          {
            kind: 'document',
            mediaId: '1003',
            mimeType: 'application/pdf',
            fileName: stored('inv.pdf'),
            caption: stored('invoice'),
          },
        ],
      },
    ])
    const [contacts] = await row('whatsapp', `${phoneNumberId}:${card}`)
    expect(contacts?.attachments).toEqual([
      {
        kind: 'contacts',
        content: {
          contacts: [{ name: { formatted_name: stored('Bob') }, phones: [{ phone: '+1 555' }] }],
        },
      },
    ])
  })

  it('email: the sender’s name and a file name (MIME decoding yields no lone surrogate)', async () => {
    const mailbox = `support-${randomId()}@inbound.example`
    const messageId = uniqueMessageId()
    const boundary = 'b-odd'
    const raw = [
      'From: =?utf-8?Q?Ada=00Customer?= <ada@customer.example>',
      `To: ${mailbox}`,
      'Subject: =?utf-8?Q?scan=00ned?=',
      'Date: Tue, 27 Aug 2024 08:49:44 -0700',
      `Message-ID: <${messageId}>`,
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `--${boundary}`,
      'Content-Type: text/plain; charset="utf-8"',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      'see=00 the scan',
      `--${boundary}`,
      'Content-Type: application/pdf',
      "Content-Disposition: attachment; filename*=utf-8''scan%00.pdf",
      'Content-Transfer-Encoding: base64',
      '',
      'JVBERi0xLjQK',
      `--${boundary}--`,
      '',
    ].join('\r\n')
    const request = async () =>
      emailRequest(e2e.stack.worker.url, raw, { from: 'ada@customer.example', to: mailbox })
    expect(await send(await request())).toBe(200)
    const { rows } = await e2e.stack.sql.query(
      `SELECT m.body, m.subject, u.display_name AS name, m.attachments
         FROM messages m JOIN conversations c ON c.id = m.conversation_id
         JOIN customers u ON u.id = c.customer_id
        WHERE m.channel = 'email' AND m.channel_message_id LIKE $1`,
      [`${mailbox}:%`],
    )
    expect(rows).toEqual([
      {
        body: 'see the scan',
        subject: 'scanned',
        name: 'AdaCustomer',
        attachments: [
          { kind: 'document', mimeType: 'application/pdf', size: 9, fileName: 'scan.pdf' },
        ],
      },
    ])
  })
})
