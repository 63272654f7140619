/**
 * The Worker's email() handler (Cloudflare Email Routing) finding the recipient's mailbox
 * connection in KV (`idx:email:<address>`, the account and each alias, as the publisher writes
 * them): its aliases key the mail (over EMAIL_MAILBOX_ALIASES: the registry wins) and the event
 * names the connection; disabled, KV failing, or an index entry its record does not vouch for is
 * a temporary SMTP error (the sender retries), and nothing is written; no entry: the variable.
 */
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test'
import { describe, expect, it } from 'vitest'
import { rawEmail } from '../../local/vendor-deliveries'
import worker from '../../worker/index'
import type { Harness } from '../support/workerd/harness'
import { brokenKv, edgeHarness, kv, putConnection } from './support/edge'

const run = () => crypto.randomUUID().slice(0, 8)

/** A mailbox and its alias, fresh per test; the connection in KV when `status` is given. */
async function mailbox(status?: 'active' | 'disabled') {
  const r = run()
  const account = `support-${r}@inbound.example`
  const alias = `help-${r}@inbound.example`
  const record = status
    ? await putConnection({ channel: 'email', account, ids: [alias], status, secrets: [] }, [
        account,
        alias,
      ])
    : null
  return { account, alias, record }
}

/** One delivery to `to` through the Worker's email() handler, as Email Routing calls it. */
async function deliverMail(h: Harness, to: string) {
  const bytes = new TextEncoder().encode(rawEmail({ to }))
  let rejected: string | null = null
  const message = {
    from: 'ada@customer.example',
    to,
    headers: new Headers(),
    raw: new Response(bytes).body,
    rawSize: bytes.byteLength,
    setReject: (reason: string) => {
      rejected = reason
    },
    forward: async () => {},
    reply: async () => {},
  } as unknown as ForwardableEmailMessage
  const ctx = createExecutionContext()
  let thrown: unknown = null
  try {
    await worker.email?.(message, h.env, ctx)
  } catch (err) {
    thrown = err
  }
  await waitOnExecutionContext(ctx)
  return { rejected, retryLater: (thrown as { code?: string } | null)?.code ?? null }
}

async function nothingWritten(h: Harness): Promise<void> {
  expect(await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])).toEqual([])
  expect((await h.originCalls()).calls).toHaveLength(0)
}

describe('email() with the mailbox in the registry', () => {
  it("a mail to an alias (any case, any +tag) is keyed as the connection's account", async () => {
    const m = await mailbox('active')
    const elsewhere = `other-${run()}@inbound.example`
    // The variable maps the alias elsewhere: the registry wins.
    const h = edgeHarness({ EMAIL_MAILBOX_ALIASES: JSON.stringify({ [m.alias]: elsewhere }) })
    const tagged = m.alias.replace('@', '+billing@').toUpperCase()
    for (const to of [m.alias, tagged, m.account]) {
      expect(await deliverMail(h, to)).toEqual({ rejected: null, retryLater: null })
    }
    const { calls } = await h.originCalls()
    expect(calls).toHaveLength(3)
    for (const call of calls) {
      expect(call.messageKey.startsWith(`${m.account}:`)).toBe(true)
      expect(call.deliveryKey.startsWith(`dedup:email:${m.account}:`)).toBe(true)
      expect(call.connection).toEqual({ id: m.record?.id, version: 1 })
    }
  })

  it('disabled: a temporary SMTP error, not a bounce; nothing written', async () => {
    const m = await mailbox('disabled')
    const h = edgeHarness()
    for (const to of [m.alias, m.account]) {
      expect(await deliverMail(h, to)).toEqual({ rejected: null, retryLater: 'email_retry_later' })
    }
    await nothingWritten(h)
  })

  it('KV failing: a temporary SMTP error; the variable does not stand in', async () => {
    const m = await mailbox()
    const h = edgeHarness({
      CONNECTIONS: brokenKv,
      EMAIL_MAILBOX_ALIASES: JSON.stringify({ [m.alias]: m.account }),
    })
    expect(await deliverMail(h, m.alias)).toEqual({
      rejected: null,
      retryLater: 'email_retry_later',
    })
    await nothingWritten(h)
  })

  it('an index entry its record no longer lists (an alias moved): retried, nothing written', async () => {
    const m = await mailbox('active')
    const other = await mailbox('active')
    // The alias's entry still names the first connection, whose record no longer lists it.
    await kv().put(`idx:email:${other.alias}`, m.record?.id ?? '')
    const h = edgeHarness()
    expect(await deliverMail(h, other.alias)).toEqual({
      rejected: null,
      retryLater: 'email_retry_later',
    })
    await nothingWritten(h)
  })

  it('no entry for the address: EMAIL_MAILBOX_ALIASES, as before, and no connection named', async () => {
    const m = await mailbox()
    const h = edgeHarness({ EMAIL_MAILBOX_ALIASES: JSON.stringify({ [m.alias]: m.account }) })
    expect(await deliverMail(h, m.alias)).toEqual({ rejected: null, retryLater: null })
    const { calls } = await h.originCalls()
    expect(calls.map((c) => c.messageKey.startsWith(`${m.account}:`))).toEqual([true])
    expect(calls[0]?.connection).toBeUndefined()
  })
})
