/**
 * What one event does to the database, by kind and channel: keys scoped by channel and chat, edits
 * and deletes updating the row (never a new one), payload mismatches, email threads.
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { finalizeEvent, type InboundEvent } from '../../contract/event'
import { parseEmail } from '../../email/parse'
import { type EmailFixture, rawEmail } from '../../local/vendor-deliveries'
import { fileTestbed } from '../support/for-file'
import { type EventOverrides, eventFixture, fetchMetrics } from '../support/origin'

const bed = fileTestbed()

const minutesAgo = (n: number) => new Date(Date.now() - n * 60_000).toISOString()

/** An edit or a delete (no text) of `original`, made `minutes` ago, under its keys unless told. */
function changeOf(
  original: InboundEvent,
  kind: 'edit' | 'delete',
  minutes: number,
  overrides: EventOverrides = {},
): Promise<InboundEvent> {
  return eventFixture({
    ...original,
    kind,
    body: '',
    occurredAt: minutesAgo(minutes),
    ...overrides,
  })
}

async function messageRow(channel: string, messageKey: string) {
  const { rows } = await bed.sql.query(
    `SELECT id::text, body, payload_hash, edited_at, deleted_at FROM messages
      WHERE channel = $1 AND channel_message_id = $2`,
    [channel, messageKey],
  )
  return rows
}

describe('message keys', () => {
  it('the same channel_message_id on two channels is two messages', async () => {
    const messageKey = 'ACshared:SM0000000000000000000000000000abcd'
    const tenant = 'ACshared'
    const sms = await bed.post(await eventFixture({ channel: 'sms', tenant, messageKey }))
    const whatsapp = await bed.post(await eventFixture({ channel: 'whatsapp', tenant, messageKey }))
    expect([sms.status, whatsapp.status]).toEqual([201, 201])
    expect(sms.body.messageId).not.toBe(whatsapp.body.messageId)
    expect(await bed.count('messages', 'channel_message_id = $1', [messageKey])).toBe(2)
  })

  it('Telegram message 42 in two chats is two messages', async () => {
    const inChat = (chat: string) =>
      eventFixture({
        channel: 'telegram',
        tenant: '123456',
        messageKey: `123456:${chat}:42`,
        sender: { externalId: `user-in-${chat}` },
      })
    const a = await bed.post(await inChat('chatA'))
    const b = await bed.post(await inChat('chatB'))
    expect([a.status, b.status]).toEqual([201, 201])
    expect(
      await bed.count(
        'messages',
        "channel = 'telegram' AND channel_message_id IN ('123456:chatA:42', '123456:chatB:42')",
      ),
    ).toBe(2)
  })

  it('a replay with another payload keeps the first, answers 200 duplicate and counts it', async () => {
    const original = await eventFixture({ body: 'the original text' })
    const tampered = await eventFixture({ ...original, body: 'another text under the same key' })
    expect(tampered.payloadHash).not.toBe(original.payloadHash)

    const first = await bed.post(original)
    const replay = await bed.post(tampered)
    expect(first.status).toBe(201)
    expect(replay.status).toBe(200)
    expect(replay.body).toMatchObject({
      outcome: 'duplicate',
      duplicate: true,
      payloadMismatch: true,
      messageId: first.body.messageId,
      conversationId: first.body.conversationId,
      customerId: first.body.customerId,
    })
    const rows = await messageRow(original.channel, original.messageKey)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ body: 'the original text', payload_hash: original.payloadHash })

    const exact = await bed.post(original)
    expect(exact.body).toMatchObject({ outcome: 'duplicate', payloadMismatch: false })

    const metrics = await (await fetchMetrics(bed.origin.url)).text()
    expect(metrics).toContain('inbound_payload_mismatch_total{channel="slack"} 1')
  })
})

describe('edits', () => {
  it('update the row in place; an older edit arriving later does not overwrite a newer one', async () => {
    const original = await eventFixture({ body: 'v1', occurredAt: minutesAgo(10) })
    const created = await bed.post(original)
    expect(created.status).toBe(201)

    const edit = (body: string, at: string) =>
      eventFixture({ ...original, kind: 'edit', body, occurredAt: at, deliveryKey: `edit-${body}` })
    const newer = await edit('v3', minutesAgo(2))
    const older = await edit('v2', minutesAgo(5))

    const applied = await bed.post(newer)
    expect(applied.status).toBe(200)
    expect(applied.body).toMatchObject({
      outcome: 'updated',
      duplicate: false,
      messageId: created.body.messageId,
      conversationId: created.body.conversationId,
    })
    const late = await bed.post(older)
    expect(late.status).toBe(200)
    expect(late.body).toMatchObject({ outcome: 'duplicate', messageId: created.body.messageId })
    const replayed = await bed.post(newer)
    expect(replayed.body.outcome).toBe('duplicate')

    const rows = await messageRow(original.channel, original.messageKey)
    expect(rows).toHaveLength(1)
    expect(rows[0].body).toBe('v3')
    expect(new Date(rows[0].edited_at).toISOString()).toBe(newer.occurredAt)
    // An edit is never a new downstream item.
    expect(await bed.count('outbox', 'message_id = $1', [created.body.messageId])).toBe(1)
    // The original hash stays: replaying the original is a plain duplicate, not a mismatch.
    expect(rows[0].payload_hash).toBe(original.payloadHash)
    expect((await bed.post(original)).body).toMatchObject({
      outcome: 'duplicate',
      payloadMismatch: false,
    })
  })

  it('an edit of a message never seen stores it, edited; the late original is a duplicate', async () => {
    const original = await eventFixture({ body: 'before', occurredAt: minutesAgo(3) })
    const edit = await changeOf(original, 'edit', 1, { body: 'after' })

    const fromEdit = await bed.post(edit)
    expect(fromEdit.status).toBe(201)
    expect(fromEdit.body.outcome).toBe('created')
    const late = await bed.post(original)
    expect(late.status).toBe(200)
    expect(late.body).toMatchObject({ outcome: 'duplicate', messageId: fromEdit.body.messageId })
    expect(late.body.payloadMismatch).toBe(false)

    const rows = await messageRow(original.channel, original.messageKey)
    expect(rows).toHaveLength(1)
    expect(rows[0].body).toBe('after')
    expect(rows[0].edited_at).not.toBeNull()
    expect(await bed.count('outbox', 'message_id = $1', [fromEdit.body.messageId])).toBe(1)
  })
})

describe('edits in the same second (Telegram edit_date has one-second resolution)', () => {
  const second = new Date(Math.floor(Date.now() / 1000 - 60) * 1000).toISOString()
  const editAt = async (
    original: Awaited<ReturnType<typeof eventFixture>>,
    body: string,
    seq: number,
  ) =>
    eventFixture({
      ...original,
      kind: 'edit',
      body,
      occurredAt: second,
      editSeq: seq,
      deliveryKey: `edit-${seq}`,
    })

  it('the later sequence wins whichever arrives first', async () => {
    for (const order of ['in order', 'reversed'] as const) {
      const original = await eventFixture({
        channel: 'telegram',
        body: 'v1',
        occurredAt: minutesAgo(5),
      })
      expect((await bed.post(original)).status).toBe(201)
      const older = await editAt(original, 'v2', 100)
      const newer = await editAt(original, 'v3', 101)
      const sequence = order === 'in order' ? [older, newer] : [newer, older]
      const answers = []
      for (const edit of sequence) answers.push((await bed.post(edit)).body.outcome)
      expect(answers).toEqual(
        order === 'in order' ? ['updated', 'updated'] : ['updated', 'duplicate'],
      )
      const rows = await messageRow('telegram', original.messageKey)
      expect(rows.map((r) => r.body)).toEqual(['v3'])
      // A replay of the winning edit changes nothing.
      expect((await bed.post(newer)).body.outcome).toBe('duplicate')
    }
  })

  it('a row edited before the upgrade (no sequence) takes a same-second edit that has one', async () => {
    const original = await eventFixture({
      channel: 'telegram',
      body: 'v1',
      occurredAt: minutesAgo(5),
    })
    expect((await bed.post(original)).status).toBe(201)
    expect((await bed.post(await editAt(original, 'v2', 300))).body.outcome).toBe('updated')
    // As a row edited by an origin before migration 20261201000003 looks: no edit_seq.
    await bed.sql.query(
      'UPDATE messages SET edit_seq = NULL WHERE channel = $1 AND channel_message_id = $2',
      ['telegram', original.messageKey],
    )
    expect((await bed.post(await editAt(original, 'v3', 301))).body.outcome).toBe('updated')
    expect((await messageRow('telegram', original.messageKey)).map((r) => r.body)).toEqual(['v3'])
  })

  it('an edit that created the row keeps its sequence: an older same-second edit does not win', async () => {
    const original = await eventFixture({
      channel: 'telegram',
      body: 'v1',
      occurredAt: minutesAgo(5),
    })
    const newer = await editAt(original, 'v3', 201)
    expect((await bed.post(newer)).body.outcome).toBe('created')
    expect((await bed.post(await editAt(original, 'v2', 200))).body.outcome).toBe('duplicate')
    expect((await messageRow('telegram', original.messageKey)).map((r) => r.body)).toEqual(['v3'])
  })
})

describe('deletes', () => {
  it('mark the row deleted; a repeat is a duplicate; an unknown message is ignored', async () => {
    const original = await eventFixture({ occurredAt: minutesAgo(4) })
    const created = await bed.post(original)
    const del = await changeOf(original, 'delete', 1)

    const first = await bed.post(del)
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ outcome: 'updated', messageId: created.body.messageId })
    const again = await bed.post(del)
    expect(again.body).toMatchObject({ outcome: 'duplicate', messageId: created.body.messageId })

    const rows = await messageRow(original.channel, original.messageKey)
    expect(rows).toHaveLength(1)
    expect(new Date(rows[0].deleted_at).toISOString()).toBe(del.occurredAt)

    const before = await bed.count('messages')
    const unknown = await bed.post(await eventFixture({ kind: 'delete', body: '' }))
    expect(unknown.status).toBe(200)
    expect(unknown.body).toEqual({
      outcome: 'ignored',
      duplicate: false,
      messageId: null,
      conversationId: null,
      customerId: null,
    })
    expect(await bed.count('messages')).toBe(before)
  })

  it('a delete that overtook its message (a queued original): the message lands once, deleted', async () => {
    const original = await eventFixture({ channel: 'telegram', occurredAt: minutesAgo(4) })
    const del = await changeOf(original, 'delete', 1, {
      deliveryKey: `${original.deliveryKey}-delete`,
    })
    expect((await bed.post(del)).body.outcome).toBe('ignored')
    expect(await bed.count('messages', 'channel_message_id = $1', [original.messageKey])).toBe(0)

    const late = await bed.post(original)
    expect(late.status).toBe(201)
    const rows = await messageRow('telegram', original.messageKey)
    expect(rows).toHaveLength(1)
    expect(new Date(rows[0].deleted_at).toISOString()).toBe(del.occurredAt)
    expect(await bed.count('outbox', 'message_id = $1', [late.body.messageId])).toBe(1)
    // The delete again (its vendor's retry): a duplicate of the stored, deleted row.
    expect((await bed.post(del)).body).toMatchObject({ outcome: 'duplicate' })
    expect(await messageRow('telegram', original.messageKey)).toHaveLength(1)
  })
})

describe('email threads', () => {
  const mailbox = 'support@example.com'
  const email = (id: string, extra: { references?: string[]; subject?: string } = {}) =>
    eventFixture({
      channel: 'email',
      tenant: mailbox,
      messageKey: `${mailbox}:<${id}@mail.example>`,
      deliveryKey: `${mailbox}:<${id}@mail.example>`,
      sender: { externalId: 'ada@example.org', displayName: 'Ada' },
      subject: 'Order 1234',
      ...extra,
    })

  it('a reply naming a message we hold joins its conversation; a non-reply opens a new one', async () => {
    const first = await bed.post(await email('first'))
    expect(first.status).toBe(201)
    const conversation = await bed.sql.query(
      'SELECT channel, subject, status FROM conversations WHERE id = $1',
      [first.body.conversationId],
    )
    expect(conversation.rows).toEqual([
      { channel: 'email', subject: 'Order 1234', status: 'pending' },
    ])

    // Nearest first, with an unknown id ahead of the known one.
    const reply = await bed.post(
      await email('reply', {
        subject: 'Re: Order 1234',
        references: [`${mailbox}:<unknown@mail.example>`, `${mailbox}:<first@mail.example>`],
      }),
    )
    expect(reply.status).toBe(201)
    expect(reply.body.conversationId).toBe(first.body.conversationId)

    const unrelated = await bed.post(await email('fresh', { subject: 'Another question' }))
    expect(unrelated.status).toBe(201)
    expect(unrelated.body.conversationId).not.toBe(first.body.conversationId)
    expect(unrelated.body.customerId).toBe(first.body.customerId)

    const orphanReply = await bed.post(
      await email('orphan', { references: [`${mailbox}:<never-seen@mail.example>`] }),
    )
    expect(orphanReply.body.conversationId).not.toBe(first.body.conversationId)
    expect(orphanReply.body.conversationId).not.toBe(unrelated.body.conversationId)

    expect(await bed.count('messages', 'conversation_id = $1', [first.body.conversationId])).toBe(2)
  })

  it('a duplicate email delivery opens no second conversation', async () => {
    const event = await email('dup')
    const [a, b] = await Promise.all([bed.post(event), bed.post(event)])
    expect([a.status, b.status].sort()).toEqual([200, 201])
    expect(a.body.conversationId).toBe(b.body.conversationId)
    expect(
      await bed.count(
        'conversations',
        "channel = 'email' AND subject = 'Order 1234' AND id NOT IN (SELECT conversation_id FROM messages)",
      ),
    ).toBe(0)
  })
})

/**
 * Email events as the parser makes them (email/parse.ts: the keys both email paths use), each
 * test in a mailbox of its own.
 */
const freshMailbox = () => `support-${randomBytes(4).toString('hex')}@inbound.example`
/** The event the parser makes of a mail to `mailbox`. */
const parsed = async (mailbox: string, fixture: EmailFixture) =>
  finalizeEvent((await parseEmail(rawEmail({ to: mailbox, ...fixture }), { mailbox })).draft)

describe('email: one sender cannot reach into another customer', () => {
  const ada = 'Ada <ada@customer.example>'
  const mallory = 'Mallory <mallory@elsewhere.example>'
  it('the same Message-ID from two senders to one mailbox: two rows, each answered created', async () => {
    const mailbox = freshMailbox()
    const messageId = `predictable-${randomBytes(4).toString('hex')}@customer.example`
    const forged = await bed.post(await parsed(mailbox, { from: mallory, messageId }))
    const genuine = await bed.post(await parsed(mailbox, { from: ada, messageId }))
    expect([forged.status, genuine.status]).toEqual([201, 201])
    expect(genuine.body.customerId).not.toBe(forged.body.customerId)
    expect(
      await bed.count('messages', "channel = 'email' AND channel_message_id LIKE $1", [
        `${mailbox}:%`,
      ]),
    ).toBe(2)
  })

  it("a stranger's reply naming another customer's message opens the stranger's own conversation", async () => {
    const mailbox = freshMailbox()
    const original = `original-${randomBytes(4).toString('hex')}@customer.example`
    const first = await bed.post(await parsed(mailbox, { from: ada, messageId: original }))
    const strangerReply = await bed.post(
      await parsed(mailbox, { from: mallory, subject: 'Re: Order 1234', inReplyTo: original }),
    )
    const genuineReply = await bed.post(
      await parsed(mailbox, { from: ada, subject: 'Re: Order 1234', inReplyTo: original }),
    )
    expect([first.status, strangerReply.status, genuineReply.status]).toEqual([201, 201, 201])
    expect(strangerReply.body.conversationId).not.toBe(first.body.conversationId)
    expect(genuineReply.body.conversationId).toBe(first.body.conversationId)
  })

  it("the origin keeps the rule even when an event names the other customer's exact key", async () => {
    const mailbox = freshMailbox()
    const first = await bed.post(await parsed(mailbox, { from: ada }))
    const victimKey = (
      await bed.sql.query('SELECT channel_message_id FROM messages WHERE id = $1', [
        first.body.messageId,
      ])
    ).rows[0]?.channel_message_id
    const forged: InboundEvent = await parsed(mailbox, { from: mallory })
    const answer = await bed.post(await finalizeEvent({ ...forged, references: [victimKey] }))
    expect(answer.status).toBe(201)
    expect(answer.body.conversationId).not.toBe(first.body.conversationId)
    expect(await bed.count('messages', 'conversation_id = $1', [first.body.conversationId])).toBe(1)
  })
})

describe('strings the database cannot hold, in events not made by finalizeEvent', () => {
  // An older Worker's event, a queued one, a dead letter replayed: the origin makes them storable
  // itself (NUL removed, a lone surrogate replaced by U+FFFD) instead of refusing them for good.
  const odd = (word: string) => `${word}\u0000-\ud800-end`
  const stored = (word: string) => `${word}-\ufffd-end`

  it('in the text, the sender’s name and every attachment field: stored, and a replay is a duplicate', async () => {
    const event = await eventFixture({ attachments: [{ kind: 'document', fileName: 'a.pdf' }] })
    const dirty = {
      ...event,
      body: odd('before'),
      sender: { ...event.sender, displayName: odd('Ada') },
      attachments: [
        { kind: 'document' as const, fileName: odd('a.pdf'), caption: odd('scan') },
        { kind: 'contacts' as const, content: { [odd('name')]: odd('Bob'), list: [odd('x')] } },
      ],
    }
    const first = await bed.post(dirty)
    expect(first.status).toBe(201)
    expect((await bed.post(dirty)).body).toMatchObject({ outcome: 'duplicate' })
    const { rows } = await bed.sql.query(
      `SELECT m.body, u.display_name AS name, m.attachments
         FROM messages m JOIN conversations c ON c.id = m.conversation_id
         JOIN customers u ON u.id = c.customer_id
        WHERE m.channel = $1 AND m.channel_message_id = $2`,
      [event.channel, event.messageKey],
    )
    expect(rows).toEqual([
      {
        body: stored('before'),
        name: stored('Ada'),
        attachments: [
          { kind: 'document', fileName: stored('a.pdf'), caption: stored('scan') },
          { kind: 'contacts', content: { [stored('name')]: stored('Bob'), list: [stored('x')] } },
        ],
      },
    ])
  })
})

describe('attachments', () => {
  const photo = {
    kind: 'image',
    mediaId: 'AgACAgQAAxkBAAIBZ2Xphoto',
    mimeType: 'image/jpeg',
    size: 48_213,
    caption: 'the broken part',
  } as const

  it('are stored as metadata with the row; a media-only message has the caption as body', async () => {
    const event = await eventFixture({ body: 'the broken part', attachments: [photo] })
    const answer = await bed.post(event)
    expect(answer.status).toBe(201)
    const { rows } = await bed.sql.query(
      'SELECT body, attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
      [event.channel, event.messageKey],
    )
    expect(rows).toEqual([{ body: 'the broken part', attachments: [photo] }])
  })

  it('a message without attachments stores an empty list and keeps its old payload hash', async () => {
    const plain = await eventFixture()
    const withEmpty = await finalizeEvent({ ...plain, attachments: [] })
    expect(withEmpty.payloadHash).toBe(plain.payloadHash)
    expect((await bed.post(plain)).status).toBe(201)
    const { rows } = await bed.sql.query(
      'SELECT attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
      [plain.channel, plain.messageKey],
    )
    expect(rows).toEqual([{ attachments: [] }])
  })

  it('another attachment under the same key is a payload mismatch; the first is kept', async () => {
    const event = await eventFixture({ body: '', attachments: [photo] })
    const other = await finalizeEvent({
      ...event,
      attachments: [{ ...photo, mediaId: 'AgACAgQAAxkBAAIBZ2Xother' }],
    })
    expect(other.payloadHash).not.toBe(event.payloadHash)
    expect((await bed.post(event)).status).toBe(201)
    const replay = await bed.post(other)
    expect(replay.body).toMatchObject({ outcome: 'duplicate', payloadMismatch: true })
    const { rows } = await bed.sql.query(
      'SELECT attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
      [event.channel, event.messageKey],
    )
    expect(rows).toEqual([{ attachments: [photo] }])
  })

  it('a location is structured content; NULs anywhere in it are dropped by finalizeEvent', async () => {
    const event = await eventFixture({
      body: '',
      attachments: [
        { kind: 'location', content: { latitude: 52.52, longitude: 13.405, name: 'Dock\u00003' } },
      ],
    })
    expect((await bed.post(event)).status).toBe(201)
    const { rows } = await bed.sql.query(
      'SELECT attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
      [event.channel, event.messageKey],
    )
    expect(rows[0].attachments[0].content).toEqual({
      latitude: 52.52,
      longitude: 13.405,
      name: 'Dock3',
    })
  })

  it('an edit with attachments replaces the row’s (a new caption); an edit without leaves them', async () => {
    const original = await eventFixture({
      body: 'the broken part',
      occurredAt: minutesAgo(10),
      attachments: [photo],
    })
    expect((await bed.post(original)).status).toBe(201)
    const recaptioned = { ...photo, caption: 'the broken part, closer' }
    const edit = (at: string, attachments?: (typeof photo | typeof recaptioned)[]) =>
      eventFixture({
        ...original,
        kind: 'edit',
        body: 'the broken part, closer',
        occurredAt: at,
        deliveryKey: `edit-${at}`,
        attachments,
      })
    expect((await bed.post(await edit(minutesAgo(5), [recaptioned]))).status).toBe(200)
    const stored = async () =>
      (
        await bed.sql.query(
          'SELECT attachments FROM messages WHERE channel = $1 AND channel_message_id = $2',
          [original.channel, original.messageKey],
        )
      ).rows
    expect(await stored()).toEqual([{ attachments: [recaptioned] }])
    expect((await bed.post(await edit(minutesAgo(2)))).status).toBe(200)
    expect(await stored()).toEqual([{ attachments: [recaptioned] }])
  })

  it('more than the bound, or content over 16 KiB, is a 400 naming the field', async () => {
    const many = await eventFixture({
      attachments: Array.from({ length: 51 }, () => ({ kind: 'file' as const })),
    })
    const big = await eventFixture({
      attachments: [{ kind: 'contacts', content: { cards: 'x'.repeat(17 * 1024) } }],
    })
    for (const event of [many, big]) {
      const answer = await bed.post(event)
      expect(answer.status).toBe(400)
      expect(JSON.stringify(answer.body)).toContain('attachments')
    }
  })
})
