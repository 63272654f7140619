/**
 * One email to an alias, both ways in, with the mailbox as a registry connection (no
 * EMAIL_MAILBOX_ALIASES anywhere): the Worker (the deployable bundle in Miniflare) finds it in
 * its KV by the envelope recipient, the Gmail poller in Postgres by the polled mailbox, and both
 * key the mail as the mailbox: one row. And the window docs/connections.md ("Mailboxes") warns
 * of: an alias the edge does not have yet keys the Worker's copy as its own address.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { type EdgeConnection, kvKeys, newConnectionId } from '../../contract/connection'
import { runId } from '../../local/services'
import { rawEmail, uniqueMessageId } from '../../local/vendor-deliveries'
import { type FakeGmail, startFakeGmail } from '../support/fake-gmail'
import { emailTestbedForFile } from './support/testbed'

const bed = emailTestbedForFile({ worker: true })
const fakes: FakeGmail[] = []
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

const rowsUnder = async (address: string) =>
  (await bed.messageRows()).filter((r) => r.channel_message_id.startsWith(`${address}:`))

/** A mailbox and its alias in Postgres; at the edge too when `atEdge`; Gmail polls the mailbox. */
async function mailbox(atEdge: boolean) {
  const run = runId()
  const account = `support-${run}@inbound.example`
  const alias = `help-${run}@inbound.example`
  const id = newConnectionId()
  await bed.db.sql.query(
    `INSERT INTO connections (id, channel, account, ids) VALUES ($1, 'email', $2, $3)`,
    [id, account, [alias]],
  )
  if (atEdge) {
    // What the publisher writes (test/connections/publisher.test.ts checks it does).
    const record: EdgeConnection = {
      v: 1,
      id,
      channel: 'email',
      account,
      ids: [alias],
      settings: {},
      status: 'active',
      version: 1,
      secrets: [],
    }
    const kv = await bed.worker.connections()
    await kv.put(kvKeys.connection(id), JSON.stringify(record))
    for (const address of [account, alias]) await kv.put(kvKeys.index('email', address), id)
  }
  const gmail = await startFakeGmail({ mailbox: account })
  fakes.push(gmail)
  const { poller } = bed.poller(gmail)
  expect(await poller.pollOnce()).toMatchObject({ status: 'completed', mode: 'full_sync' })
  return { account, alias, gmail, poller }
}

describe('a mail to an alias, through the Worker and through Gmail', () => {
  it('the mailbox connection at both: one row, keyed as the mailbox', async () => {
    const m = await mailbox(true)
    const raw = rawEmail({ to: m.alias, messageId: uniqueMessageId() })
    expect(await bed.worker.deliver(raw, { to: m.alias })).toEqual({ outcome: 'accepted' })
    m.gmail.deliver(raw)
    expect(await m.poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })
    expect(await rowsUnder(m.account)).toHaveLength(1)
    expect(await rowsUnder(m.alias)).toHaveLength(0)
  })

  it('not yet at the edge (the propagation window): the Worker keys it as the alias, a second row', async () => {
    const m = await mailbox(false)
    const raw = rawEmail({ to: m.alias, messageId: uniqueMessageId() })
    expect(await bed.worker.deliver(raw, { to: m.alias })).toEqual({ outcome: 'accepted' })
    m.gmail.deliver(raw)
    expect(await m.poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })
    expect(await rowsUnder(m.account)).toHaveLength(1)
    expect(await rowsUnder(m.alias)).toHaveLength(1)
  })
})
