/**
 * The Cloudflare path: the Worker's `email()` handler in workerd (the deployable bundle under
 * Miniflare), with the real origin, Postgres and Redis. Assertions are on message rows, Redis
 * keys and what the handler told the sending server (accept, temporary error, reject).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ANSWER_SIGNATURE_HEADER,
  SIGNATURE_HEADER,
  signAnswer,
} from '../../contract/forward-signature'
import { runId } from '../../local/services'
import { CUSTOMER, rawEmail, uniqueMessageId } from '../../local/vendor-deliveries'
import { DONE_VALUE } from '../support/claim-values'
import { eventually } from '../support/test-stack'
import { rawEmailWithAttachments, scanPdf, senderKeyPart } from './support/emails'
import { emailTestbedForFile } from './support/testbed'

const bed = emailTestbedForFile({ worker: true })
/**
 * An origin that answers every event with the status named first in its path (`/400/...`),
 * signed as the origin signs its answers (the Worker takes no other answer as the origin's).
 */
let statusOrigin: Server
let statusOriginUrl: string

beforeAll(async () => {
  statusOrigin = createServer((req, res) => {
    req.resume()
    const status = Number(/^\/(\d{3})\//.exec(req.url ?? '')?.[1] ?? 500)
    const code = status === 400 ? 'invalid_event' : 'database_unavailable'
    const body = JSON.stringify({ error: { code, message: code } })
    const requestSignature = String(req.headers[SIGNATURE_HEADER] ?? '')
    void signAnswer(bed.db.secret, requestSignature, status, body).then((signature) => {
      res.writeHead(status, {
        'content-type': 'application/json',
        [ANSWER_SIGNATURE_HEADER]: signature,
      })
      res.end(body)
    })
  })
  await new Promise<void>((resolve) => statusOrigin.listen(0, '127.0.0.1', resolve))
  statusOriginUrl = `http://127.0.0.1:${(statusOrigin.address() as AddressInfo).port}`
}, 180_000)

afterAll(async () => {
  if (statusOrigin) await new Promise((resolve) => statusOrigin.close(resolve))
})

/** A fresh inbox per test, so row counts are the test's own. */
const inbox = () => `support-${runId()}@inbound.example`

const rowsFor = async (mailbox: string) =>
  (await bed.messageRows()).filter((r) => r.channel_message_id.startsWith(`${mailbox}:`))

/**
 * The rows once `count` have landed: an accepted mail may have been queued (the forward slower
 * than SHED_SLOW_MS on a loaded machine) and land through the spool consumer a batch later.
 */
const rowsOnceLanded = async (mailbox: string, count: number) => {
  await eventually(async () => (await rowsFor(mailbox)).length >= count)
  return rowsFor(mailbox)
}

/** The claim of a mail from the fixtures' customer (the From address is part of the key). */
const claimValue = (mailbox: string, id: string) =>
  bed.redis.get(`${bed.prefix}dedup:email:${mailbox}:${senderKeyPart()}:${id}`)

describe('through the runtime’s own message (/cdn-cgi/handler/email)', () => {
  it('stores an email once, however often it is delivered', async () => {
    const to = inbox()
    const id = uniqueMessageId()
    const raw = rawEmail({ to, messageId: id })
    for (let i = 0; i < 5; i++) {
      const answer = await bed.worker.deliverViaHandler(raw, { to })
      expect(answer).toEqual({ status: 200, text: 'Worker successfully processed email' })
    }
    const rows = await rowsFor(to)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      channel_message_id: `${to}:${senderKeyPart()}:${id}`,
      first_delivery_key: `dedup:email:${to}:${senderKeyPart()}:${id}`,
    })
    expect(await claimValue(to, id)).toMatch(DONE_VALUE)
  })

  it('five concurrent deliveries of one email: one row (the others wait or retry later)', async () => {
    const to = inbox()
    const raw = rawEmail({ to })
    // An attempt that finds another in flight past its wait throws; its sender retries.
    const sent = await Promise.all(Array.from({ length: 5 }, () => bed.worker.send(raw, { to })))
    expect(sent.map((s) => s.final)).toEqual(Array(5).fill('accepted'))
    expect(await rowsOnceLanded(to, 1)).toHaveLength(1)
  })

  it('ten emails from one sender in the same second, different Message-IDs: ten rows', async () => {
    const to = inbox()
    const sameSecond = { to, date: 'Tue, 27 Aug 2024 08:49:44 -0700', text: 'same text' }
    const sent = await Promise.all(
      Array.from({ length: 10 }, () => bed.worker.send(rawEmail(sameSecond), { to }, 'handler')),
    )
    expect(sent.map((s) => s.final)).toEqual(Array(10).fill('accepted'))
    expect(await rowsOnceLanded(to, 10)).toHaveLength(10)
  })
})

describe('keys', () => {
  it('no Message-ID, delivered twice: one row under the content hash', async () => {
    const to = inbox()
    const raw = rawEmail({ to, messageId: null, text: `no id ${runId()}` })
    expect(await bed.worker.deliver(raw, { to })).toEqual({ outcome: 'accepted' })
    expect(await bed.worker.deliver(raw, { to })).toEqual({ outcome: 'accepted' })
    const rows = await rowsFor(to)
    expect(rows).toHaveLength(1)
    expect(rows[0]?.channel_message_id).toMatch(/:content-sha256:[0-9a-f]{32}$/)
  })

  it('the same Message-ID to two inboxes (Cc): one row per inbox, each its own tenant', async () => {
    const [a, b] = [inbox(), inbox()]
    const raw = rawEmail({ to: `${a}, ${b}` })
    for (const to of [a, b, a, b])
      expect(await bed.worker.deliver(raw, { to })).toEqual({ outcome: 'accepted' })
    const { rows } = await bed.db.sql.query(
      `SELECT c.tenant, m.conversation_id::text
         FROM messages m JOIN conversations v ON v.id = m.conversation_id
         JOIN customers c ON c.id = v.customer_id
        WHERE c.tenant = ANY($1) ORDER BY c.tenant`,
      [[a, b]],
    )
    expect(rows.map((r) => r.tenant)).toEqual([a, b].sort())
    expect(rows[0]?.conversation_id).not.toBe(rows[1]?.conversation_id)
  })

  it('the same Message-ID from another sender first: both mails are stored, each once', async () => {
    const to = inbox()
    const id = uniqueMessageId('customer.example')
    const forged = rawEmail({ to, messageId: id, from: 'mallory@elsewhere.example', text: 'x' })
    const genuine = rawEmail({ to, messageId: id })
    for (const raw of [forged, genuine, genuine, forged])
      expect(await bed.worker.deliver(raw, { to })).toEqual({ outcome: 'accepted' })
    const rows = await rowsFor(to)
    expect(rows.map((r) => r.channel_message_id).sort()).toEqual(
      [
        `${to}:${senderKeyPart('mallory@elsewhere.example')}:${id}`,
        `${to}:${senderKeyPart()}:${id}`,
      ].sort(),
    )
    expect(await claimValue(to, id)).toMatch(DONE_VALUE)
  })

  it("a stranger's In-Reply-To of a customer's mail opens the stranger's own conversation", async () => {
    const to = inbox()
    const original = uniqueMessageId('customer.example')
    await bed.worker.deliver(rawEmail({ to, messageId: original, subject: 'Help' }), { to })
    const reply = { to, subject: 'Re: Help', inReplyTo: original, references: [original] }
    await bed.worker.deliver(rawEmail({ ...reply, from: 'mallory@elsewhere.example' }), { to })
    await bed.worker.deliver(rawEmail(reply), { to })
    const rows = await rowsFor(to)
    expect(rows).toHaveLength(3)
    expect(rows[1]?.conversation_id).not.toBe(rows[0]?.conversation_id)
    expect(rows[2]?.conversation_id).toBe(rows[0]?.conversation_id)
  })

  it('a reply joins the conversation of the message it answers', async () => {
    const to = inbox()
    const original = uniqueMessageId('customer.example')
    const unrelated = uniqueMessageId('customer.example')
    await bed.worker.deliver(rawEmail({ to, messageId: original, subject: 'Help' }), { to })
    await bed.worker.deliver(rawEmail({ to, messageId: unrelated, subject: 'Other' }), { to })
    await bed.worker.deliver(
      rawEmail({
        to,
        subject: 'Re: Help',
        inReplyTo: original,
        references: [uniqueMessageId('elsewhere.example'), original],
      }),
      { to },
    )
    const rows = await rowsFor(to)
    expect(rows).toHaveLength(3)
    expect(rows[2]?.conversation_id).toBe(rows[0]?.conversation_id)
    expect(rows[1]?.conversation_id).not.toBe(rows[0]?.conversation_id)
  })
})

describe('what the sending server is told', () => {
  it.each([
    ['down', 'http://127.0.0.1:9', ''],
    ['answering 503', '/503', ''],
    // 64K three-byte characters: 197 KB of UTF-8, over a queue message: through R2.
    ['down, the event too large for a queue message', 'http://127.0.0.1:9', '中'.repeat(65_536)],
  ])(
    'origin %s: the mail is accepted and queued; the queue consumer stores it once',
    async (_, origin, text) => {
      const to = inbox()
      const id = uniqueMessageId()
      const raw = rawEmail({ to, messageId: id, ...(text ? { text } : {}) })
      const ORIGIN_URL = origin.startsWith('/') ? `${statusOriginUrl}${origin}` : origin

      // This delivery's env points at a dead origin; the queue consumer runs with the Worker's
      // own env, whose origin is up, as after a recovery.
      const answer = await bed.worker.deliver(
        raw,
        { to },
        { env: { ORIGIN_URL, ORIGIN_TIMEOUT_MS: '500' } },
      )

      expect(answer).toEqual({ outcome: 'accepted' })
      const deadline = Date.now() + 20_000
      while (Date.now() < deadline && (await rowsFor(to)).length === 0) {
        await new Promise((r) => setTimeout(r, 200))
      }
      expect(await rowsFor(to)).toHaveLength(1)
      expect(await bed.worker.deliver(raw, { to })).toEqual({ outcome: 'accepted' })
      expect(await rowsFor(to)).toHaveLength(1)
    },
  )

  it.each([
    ['email left out of SPOOL_CHANNELS', { SPOOL_CHANNELS: 'slack,whatsapp,sms,telegram' }, ''],
  ])(
    'origin down and %s: the handler throws (temporary SMTP error) and releases its claim',
    async (_, env, text) => {
      const to = inbox()
      const id = uniqueMessageId()
      const raw = rawEmail({ to, messageId: id, ...(text ? { text } : {}) })

      const answer = await bed.worker.deliver(
        raw,
        { to },
        { env: { ORIGIN_URL: 'http://127.0.0.1:9', ORIGIN_TIMEOUT_MS: '500', ...env } },
      )

      expect(answer.outcome).toBe('threw')
      expect(await claimValue(to, id)).toBeNull()
      await new Promise((r) => setTimeout(r, 1_500))
      expect(await rowsFor(to)).toHaveLength(0)
      // The sender's retry, once the origin is back, is taken.
      expect(await bed.worker.deliver(raw, { to })).toEqual({ outcome: 'accepted' })
      expect(await rowsFor(to)).toHaveLength(1)
    },
  )

  it('the origin refuses the event for good (4xx): setReject, claim released', async () => {
    const to = inbox()
    const id = uniqueMessageId()
    const answer = await bed.worker.deliver(
      rawEmail({ to, messageId: id }),
      { to },
      {
        env: { ORIGIN_URL: `${statusOriginUrl}/400` },
      },
    )
    expect(answer).toEqual({
      outcome: 'rejected',
      reason: 'Message refused by the receiving system',
    })
    expect(await claimValue(to, id)).toBeNull()
  })

  it.each([
    ['over 25 MiB (as the runtime measured it)', rawEmail(), 25 * 1024 * 1024 + 1, /too large/],
    ['without a From address', rawEmail().replace(/^From: .*\r\n/m, ''), undefined, /no From/],
    ['not an email at all', '\u0000\u0001\u0002', undefined, /no From/],
  ])('%s: setReject, nothing claimed or stored', async (_, raw, rawSize, reason) => {
    const to = inbox()
    const answer = await bed.worker.deliver(raw, { to }, { rawSize })
    expect(answer.outcome).toBe('rejected')
    expect(answer.outcome === 'rejected' && answer.reason).toMatch(reason)
    expect(await rowsFor(to)).toHaveLength(0)
    expect(await bed.redis.keys(`${bed.prefix}dedup:email:${to}:*`)).toEqual([])
  })

  it('EMAIL_MAILBOX_ALIASES invalid: a temporary error, nothing claimed or stored (the origin refuses to start with it)', async () => {
    const to = inbox()
    const env = { EMAIL_MAILBOX_ALIASES: '{"help@inbound.example": 42}' }
    const answer = await bed.worker.deliver(rawEmail({ to }), { to }, { env })
    expect(answer.outcome).toBe('threw')
    expect(await rowsFor(to)).toHaveLength(0)
    expect(await bed.redis.keys(`${bed.prefix}dedup:email:${to}:*`)).toEqual([])
  })

  it('logs each decision with the SMTP answer the sender got (250, 451, 550), not an HTTP status', async () => {
    const decisions = (to: string) =>
      bed.worker
        .logs()
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as Record<string, unknown>]
          } catch {
            return []
          }
        })
        .filter(
          (l) => l.msg === 'decision' && String(l.deliveryKey).startsWith(`dedup:email:${to}:`),
        )
        .map((l) => [l.decision, l.status])
    const accepted = inbox()
    await bed.worker.deliver(rawEmail({ to: accepted }), { to: accepted })
    const refused = inbox()
    await bed.worker.deliver(
      rawEmail({ to: refused }),
      { to: refused },
      { env: { ORIGIN_URL: `${statusOriginUrl}/400` } },
    )
    const later = inbox()
    await bed.worker.deliver(
      rawEmail({ to: later }),
      { to: later },
      {
        env: { ORIGIN_URL: 'http://127.0.0.1:9', ORIGIN_TIMEOUT_MS: '500', SPOOL_CHANNELS: 'none' },
      },
    )
    expect(decisions(accepted)).toEqual([['forwarded', 250]])
    expect(decisions(refused)).toEqual([['rejected', 550]])
    expect(decisions(later)).toEqual([['retry', 451]])
  })

  it('logs decisions with keys, never the body or the sender address', async () => {
    const to = inbox()
    const secretText = `private body ${runId()}`
    await bed.worker.deliver(rawEmail({ to, text: secretText }), { to })
    const logs = bed.worker.logs()
    expect(
      logs.some((l) => l.includes('"channel":"email"') && l.includes(`dedup:email:${to}:`)),
    ).toBe(true)
    expect(logs.some((l) => l.includes(secretText))).toBe(false)
    // The From address is part of the keys only as a hash.
    expect(logs.some((l) => l.includes(CUSTOMER))).toBe(false)
  })
})

describe('attachments', () => {
  it('a PDF with no text becomes a row: empty body, its metadata in attachments, no bytes', async () => {
    const to = inbox()
    const pdf = scanPdf('scan-0001.pdf')
    const raw = rawEmailWithAttachments({ to, subject: 'Scan' }, [pdf.fixture])
    expect(await bed.worker.deliver(raw, { to })).toEqual({ outcome: 'accepted' })
    expect(await bed.worker.deliver(raw, { to })).toEqual({ outcome: 'accepted' })
    const { rows } = await bed.db.sql.query(
      `SELECT body, attachments FROM messages WHERE channel = 'email' AND channel_message_id LIKE $1`,
      [`${to}:%`],
    )
    expect(rows).toEqual([{ body: '', attachments: [pdf.stored] }])
    expect(JSON.stringify(rows)).not.toContain('%PDF')
  })
})
