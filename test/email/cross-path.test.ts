/**
 * One email, two ways in: the Cloudflare Email Worker (workerd, the deployable bundle) and the
 * Gmail poller (in the origin's process, against the fake Gmail), on one Postgres and one Redis.
 * Whatever the order, and when both run at once, the email is one message row; a reply that comes
 * the other way joins its conversation.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { runId } from '../../local/services'
import { rawEmail, uniqueMessageId } from '../../local/vendor-deliveries'
import type { GmailPoller } from '../../origin/gmail'
import { counterValue } from '../../origin/gmail/metrics'
import { type FakeGmail, startFakeGmail } from '../support/fake-gmail'
import {
  CLOUDFLARE_TRACE_HEADERS,
  GMAIL_TRACE_HEADERS,
  rawEmailWithAttachments,
  scanPdf,
  senderKeyPart,
} from './support/emails'
import { emailTestbedForFile } from './support/testbed'

const bed = emailTestbedForFile({ worker: true })
let gmail: FakeGmail
let poller: GmailPoller
let mailbox: string

/** Each test: its own mailbox (one key scope), fake Gmail and poller, past its first full sync. */
async function freshMailbox(env: Record<string, string> = {}): Promise<void> {
  mailbox = `support-${runId()}@inbound.example`
  gmail = await startFakeGmail({ mailbox })
  poller = bed.poller(gmail, { env }).poller
  expect(await poller.pollOnce()).toMatchObject({ status: 'completed', mode: 'full_sync' })
}
afterEach(async () => {
  await gmail?.close()
})

const rows = async () =>
  (await bed.messageRows()).filter((r) => r.channel_message_id.startsWith(`${mailbox}:`))

/** The copies each path sees: the same message, with the trace headers its relay added. */
function copies(fixture: Parameters<typeof rawEmail>[0] = {}) {
  const common = { to: mailbox, messageId: uniqueMessageId(), ...fixture }
  return {
    viaCloudflare: rawEmail({ ...common, traceHeaders: CLOUDFLARE_TRACE_HEADERS }),
    viaGmail: rawEmail({ ...common, traceHeaders: GMAIL_TRACE_HEADERS }),
  }
}

describe('the same email both ways', () => {
  it('Cloudflare first, then Gmail: one row; Gmail stops at the Redis claim', async () => {
    await freshMailbox()
    const email = copies()
    expect(await bed.worker.deliver(email.viaCloudflare, { to: mailbox })).toEqual({
      outcome: 'accepted',
    })
    gmail.deliver(email.viaGmail)
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })

    const stored = await rows()
    expect(stored).toHaveLength(1)
    expect(stored[0]?.first_delivery_key).toMatch(/^dedup:email:/)
    const redisDuplicates = { outcome: 'duplicate', decided_by: 'redis' }
    expect(await counterValue(poller.metrics.ingested, redisDuplicates)).toBe(1)
  })

  it('Gmail first, then Cloudflare: one row; the handler accepts without a second', async () => {
    await freshMailbox()
    const email = copies()
    gmail.deliver(email.viaGmail)
    await poller.pollOnce()
    expect(await bed.worker.deliver(email.viaCloudflare, { to: mailbox })).toEqual({
      outcome: 'accepted',
    })
    const stored = await rows()
    expect(stored).toHaveLength(1)
    expect(stored[0]?.first_delivery_key).toMatch(/^gmail:/)
    const decision = bed.worker
      .logs()
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find(
        (l) => l.msg === 'decision' && String(l.deliveryKey).startsWith(`dedup:email:${mailbox}:`),
      )
    expect(decision).toMatchObject({ decision: 'duplicate', decidedBy: 'redis' })
  })

  it('both at once, ten emails: ten rows', async () => {
    await freshMailbox()
    const emails = Array.from({ length: 10 }, (_, i) => copies({ subject: `concurrent ${i}` }))
    for (const email of emails) gmail.deliver(email.viaGmail)
    // A handler that meets the poller's claim in flight past its wait throws; its sender retries.
    const [sent] = await Promise.all([
      Promise.all(emails.map((e) => bed.worker.send(e.viaCloudflare, { to: mailbox }))),
      poller.pollOnce(),
    ])
    expect(sent.map((s) => s.final)).toEqual(Array(10).fill('accepted'))
    expect(await rows()).toHaveLength(10)
  })

  it('no Message-ID, both ways (other trace headers): one row', async () => {
    await freshMailbox()
    const email = copies({ messageId: null, text: `no id ${runId()}` })
    gmail.deliver(email.viaGmail)
    const [sent] = await Promise.all([
      bed.worker.send(email.viaCloudflare, { to: mailbox }),
      poller.pollOnce(),
    ])
    expect(sent.final).toBe('accepted')
    expect(await bed.worker.deliver(email.viaCloudflare, { to: mailbox })).toEqual({
      outcome: 'accepted',
    })
    const stored = await rows()
    expect(stored).toHaveLength(1)
    expect(stored[0]?.channel_message_id).toMatch(/:content-sha256:/)
  })

  it('a reply that comes the other way joins the conversation', async () => {
    await freshMailbox()
    const original = uniqueMessageId('customer.example')
    await bed.worker.deliver(copies({ messageId: original, subject: 'Help' }).viaCloudflare, {
      to: mailbox,
    })
    gmail.deliver(copies({ subject: 'Re: Help', inReplyTo: original }).viaGmail)
    await poller.pollOnce()
    const stored = await rows()
    expect(stored).toHaveLength(2)
    expect(stored[1]?.conversation_id).toBe(stored[0]?.conversation_id)
  })
})

describe('another sender reusing the Message-ID', () => {
  const mallory = 'mallory@elsewhere.example'

  it('forged first via Cloudflare, then the genuine mail both ways: one row each', async () => {
    await freshMailbox()
    const email = copies()
    const messageId = /^Message-ID: <(.*)>$/m.exec(email.viaGmail)?.[1]
    const forged = rawEmail({ to: mailbox, messageId, from: mallory, text: 'not the real one' })
    expect(await bed.worker.deliver(forged, { to: mailbox, from: mallory })).toEqual({
      outcome: 'accepted',
    })
    expect(await bed.worker.deliver(email.viaCloudflare, { to: mailbox })).toEqual({
      outcome: 'accepted',
    })
    gmail.deliver(email.viaGmail)
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })

    const keys = (await rows()).map((r) => r.channel_message_id).sort()
    expect(keys).toEqual(
      [
        `${mailbox}:${senderKeyPart(mallory)}:${messageId}`,
        `${mailbox}:${senderKeyPart()}:${messageId}`,
      ].sort(),
    )
  })

  it("a stranger's reply via Gmail to a customer's Cloudflare mail stays out of its conversation", async () => {
    await freshMailbox()
    const original = uniqueMessageId('customer.example')
    await bed.worker.deliver(copies({ messageId: original, subject: 'Help' }).viaCloudflare, {
      to: mailbox,
    })
    gmail.deliver(copies({ subject: 'Re: Help', inReplyTo: original, from: mallory }).viaGmail)
    await poller.pollOnce()
    const stored = await rows()
    expect(stored).toHaveLength(2)
    expect(stored[1]?.conversation_id).not.toBe(stored[0]?.conversation_id)
  })
})

describe('attachments both ways', () => {
  it('an attachment-only mail without Message-ID, Gmail then Cloudflare: one row, its files', async () => {
    await freshMailbox()
    const pdf = scanPdf()
    const common = { to: mailbox, messageId: null, subject: 'Scan' }
    const files = [pdf.fixture]
    gmail.deliver(rawEmailWithAttachments({ ...common, traceHeaders: GMAIL_TRACE_HEADERS }, files))
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })
    const viaCloudflare = rawEmailWithAttachments(
      { ...common, traceHeaders: CLOUDFLARE_TRACE_HEADERS },
      files,
    )
    expect(await bed.worker.deliver(viaCloudflare, { to: mailbox })).toEqual({
      outcome: 'accepted',
    })
    const { rows: stored } = await bed.db.sql.query(
      `SELECT body, attachments FROM messages WHERE channel = 'email' AND channel_message_id LIKE $1`,
      [`${mailbox}:%`],
    )
    expect(stored).toEqual([{ body: '', attachments: [pdf.stored] }])
  })
})

describe('one inbox, other addresses: the key and the tenant are the inbox', () => {
  /** Every email row of a Message-ID, whatever mailbox scopes its key, with its customer's tenant. */
  async function rowsOf(messageId: string) {
    const { rows: found } = await bed.db.sql.query(
      `SELECT m.channel_message_id AS key, u.tenant, m.conversation_id::text AS conversation
         FROM messages m JOIN conversations c ON c.id = m.conversation_id
         JOIN customers u ON u.id = c.customer_id
        WHERE m.channel = 'email' AND m.channel_message_id LIKE $1 ORDER BY m.id`,
      [`%:${messageId}`],
    )
    return found as Array<{ key: string; tenant: string; conversation: string }>
  }

  it('to support+tag@ via Cloudflare, and polled as support@ via Gmail: one row of support@; to another mailbox: its own', async () => {
    await freshMailbox()
    const messageId = uniqueMessageId()
    const tagged = mailbox.replace('@', '+Billing@').replace('inbound.example', 'Inbound.Example')
    const other = `other-${runId()}@inbound.example`
    const email = copies({ messageId, to: tagged })
    expect(await bed.worker.deliver(email.viaCloudflare, { to: tagged })).toEqual({
      outcome: 'accepted',
    })
    gmail.deliver(email.viaGmail)
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })
    expect(await bed.worker.deliver(email.viaCloudflare, { to: other })).toEqual({
      outcome: 'accepted',
    })
    const key = (box: string) => `${box}:${senderKeyPart()}:${messageId}`
    expect(await rowsOf(messageId)).toEqual([
      { key: key(mailbox), tenant: mailbox, conversation: expect.any(String) },
      { key: key(other), tenant: other, conversation: expect.any(String) },
    ])
  })

  it('to a configured alias via Cloudflare, then via Gmail: one row; a reply to the alias joins its conversation', async () => {
    const alias = `help-${runId()}@inbound.example`
    const support = `support-${runId()}@inbound.example`
    const env = { EMAIL_MAILBOX_ALIASES: JSON.stringify({ [alias]: support }) }
    mailbox = support
    gmail = await startFakeGmail({ mailbox })
    poller = bed.poller(gmail, { env }).poller
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', mode: 'full_sync' })
    const messageId = uniqueMessageId()
    const email = copies({ messageId, to: alias })
    expect(await bed.worker.deliver(email.viaCloudflare, { to: alias }, { env })).toEqual({
      outcome: 'accepted',
    })
    gmail.deliver(email.viaGmail)
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })
    const [first, ...more] = await rowsOf(messageId)
    expect(more).toEqual([])
    expect(first).toMatchObject({
      key: `${support}:${senderKeyPart()}:${messageId}`,
      tenant: support,
    })

    const reply = uniqueMessageId()
    const answer = copies({
      messageId: reply,
      to: `${alias.replace('@', '+x@')}`,
      inReplyTo: messageId,
    })
    expect(
      await bed.worker.deliver(answer.viaCloudflare, { to: alias.replace('@', '+x@') }, { env }),
    ).toEqual({ outcome: 'accepted' })
    expect(await rowsOf(reply)).toEqual([
      {
        key: `${support}:${senderKeyPart()}:${reply}`,
        tenant: support,
        conversation: first?.conversation,
      },
    ])
  })
})
