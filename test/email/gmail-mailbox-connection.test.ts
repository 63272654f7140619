/**
 * The Gmail poller with the polled mailbox in the registry (a connection of channel `email`:
 * its account the inbox, its ids the aliases), read from Postgres at each poll: its aliases key
 * the mail (over EMAIL_MAILBOX_ALIASES: the registry wins), a disabled mailbox is not polled,
 * and an enable takes what Gmail kept. Real Postgres and Redis, a fake Gmail.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { newConnectionId } from '../../contract/connection'
import { runId } from '../../local/services'
import { rawEmail } from '../../local/vendor-deliveries'
import { counterValue } from '../../origin/gmail/metrics'
import { type FakeGmail, startFakeGmail } from '../support/fake-gmail'
import { emailTestbedForFile } from './support/testbed'

const bed = emailTestbedForFile()
const fakes: FakeGmail[] = []

afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

/** A mailbox connection (as the registry stores one) and a fake Gmail polling `polled`. */
async function mailbox(status: 'active' | 'disabled', polled: 'account' | 'alias') {
  const run = runId()
  const account = `support-${run}@inbound.example`
  const alias = `help-${run}@inbound.example`
  const id = newConnectionId()
  await bed.db.sql.query(
    `INSERT INTO connections (id, channel, account, ids, status) VALUES ($1, 'email', $2, $3, $4)`,
    [id, account, [alias], status],
  )
  const gmail = await startFakeGmail({ mailbox: polled === 'account' ? account : alias })
  fakes.push(gmail)
  return { id, account, alias, gmail }
}

const rowsUnder = async (address: string) =>
  (await bed.messageRows()).filter((r) => r.channel_message_id.startsWith(`${address}:`))

describe('the polled mailbox in the registry', () => {
  it("is keyed by the connection's account, over EMAIL_MAILBOX_ALIASES", async () => {
    // Gmail is polled under the alias; the variable would map it elsewhere: the registry wins.
    const m = await mailbox('active', 'alias')
    const elsewhere = `other-${runId()}@inbound.example`
    m.gmail.deliver(rawEmail({ to: m.alias }))
    const { poller } = bed.poller(m.gmail, {
      env: { EMAIL_MAILBOX_ALIASES: JSON.stringify({ [m.alias]: elsewhere }) },
    })
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })
    expect(await rowsUnder(m.account)).toHaveLength(1)
    expect(await rowsUnder(m.alias)).toHaveLength(0)
    expect(await rowsUnder(elsewhere)).toHaveLength(0)
  })

  it('an alias added applies from the next poll, with no restart', async () => {
    const run = runId()
    const polled = `help-${run}@inbound.example`
    const gmail = await startFakeGmail({ mailbox: polled })
    fakes.push(gmail)
    const { poller } = bed.poller(gmail)
    gmail.deliver(rawEmail({ to: polled }))
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })
    expect(await rowsUnder(polled)).toHaveLength(1)

    const account = `support-${run}@inbound.example`
    await bed.db.sql.query(
      `INSERT INTO connections (id, channel, account, ids) VALUES ($1, 'email', $2, $3)`,
      [newConnectionId(), account, [polled]],
    )
    gmail.deliver(rawEmail({ to: polled }))
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })
    expect(await rowsUnder(account)).toHaveLength(1)
  })

  it('disabled: not polled (nothing asked of Gmail); enabled: what Gmail kept is taken', async () => {
    const m = await mailbox('disabled', 'account')
    m.gmail.deliver(rawEmail())
    const { poller } = bed.poller(m.gmail)
    expect(await poller.pollOnce()).toMatchObject({ status: 'disabled', ingested: 0 })
    expect(m.gmail.requests()).toHaveLength(0)
    expect(await counterValue(poller.metrics.polls, { result: 'disabled' })).toBe(1)
    expect(await rowsUnder(m.account)).toHaveLength(0)

    await bed.db.sql.query(`UPDATE connections SET status = 'active' WHERE id = $1`, [m.id])
    expect(await poller.pollOnce()).toMatchObject({ status: 'completed', ingested: 1 })
    expect(await rowsUnder(m.account)).toHaveLength(1)
  })
})
