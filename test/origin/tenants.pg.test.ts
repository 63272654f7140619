/**
 * One tenant's event never writes another tenant's rows, on every channel, against the real
 * origin and Postgres: tenant B's message stays as it was when an event of tenant A names its
 * message key, as a new message, an edit or a delete (a Worker bug, or a gateway check gone
 * missing, is what this guards against: the Worker signs whatever it forwards).
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import type { Channel, InboundEvent } from '../../contract/event'
import { fileTestbed } from '../support/for-file'
import { eventFixture } from '../support/origin'

const bed = fileTestbed()

const hex = (bytes: number) => randomBytes(bytes).toString('hex')

interface TenantCase {
  channel: Channel
  /** Two tenants of the channel. */
  a: string
  b: string
  /** A fresh message key of `tenant`, as the Worker makes them. */
  key(tenant: string): string
}

const SENDER = `from-sha256-${'0'.repeat(32)}`
const CASES: TenantCase[] = [
  { channel: 'slack', a: 'T0TEAMA', b: 'T0TEAMB', key: (t) => `${t}:C0001:${hex(4)}.000100` },
  {
    channel: 'sms',
    a: `AC${'a'.repeat(32)}`,
    b: `AC${'b'.repeat(32)}`,
    key: (t) => `${t}:SM${hex(16)}`,
  },
  { channel: 'whatsapp', a: '1001', b: '2002', key: (t) => `${t}:wamid.${hex(8)}` },
  {
    channel: 'telegram',
    a: '1111',
    b: '2222',
    key: (t) => `${t}:77:${Number.parseInt(hex(3), 16)}`,
  },
  {
    channel: 'email',
    a: 'a@inbound.example',
    b: 'b@inbound.example',
    key: (t) => `${t}:${SENDER}:${hex(6)}@mail.example`,
  },
]

interface Row {
  body: string
  edited_at: Date | null
  deleted_at: Date | null
}

async function rowsOf(channel: string, messageKey: string): Promise<Row[]> {
  const { rows } = await bed.sql.query<Row>(
    `SELECT body, edited_at, deleted_at FROM messages
      WHERE channel = $1 AND channel_message_id = $2`,
    [channel, messageKey],
  )
  return rows
}

/** Tenant B's message, stored. */
async function storedMessageOf(channel: Channel, tenant: string, messageKey: string) {
  const original = await eventFixture({ channel, tenant, messageKey, body: "B's own text" })
  expect((await bed.post(original)).status).toBe(201)
  return original
}

/** A message, an edit and a delete under `original`'s key, sent as `tenant`. */
function forgedAs(tenant: string, original: InboundEvent): Promise<InboundEvent[]> {
  const later = new Date(Date.parse(original.occurredAt) + 60_000).toISOString()
  const as = { channel: original.channel, tenant, messageKey: original.messageKey }
  return Promise.all([
    eventFixture({ ...as, kind: 'message', body: 'forged new' }),
    eventFixture({ ...as, kind: 'edit', body: 'forged edit', occurredAt: later }),
    eventFixture({ ...as, kind: 'delete', body: '', occurredAt: later }),
  ])
}

async function expectUntouched(original: InboundEvent, forgedTenant: string): Promise<void> {
  expect(await rowsOf(original.channel, original.messageKey)).toEqual([
    { body: "B's own text", edited_at: null, deleted_at: null },
  ])
  const tombstones = 'message_tombstones'
  expect(await bed.count(tombstones, 'channel_message_id = $1', [original.messageKey])).toBe(0)
  expect(await bed.count('customers', 'tenant = $1', [forgedTenant])).toBe(0)
}

describe.each(CASES)('$channel', ({ channel, a, b, key }) => {
  it("an event of tenant A naming tenant B's message key (new, edit, delete): 400, B's row untouched", async () => {
    const original = await storedMessageOf(channel, b, key(b))
    const answers = []
    for (const forged of await forgedAs(a, original)) answers.push(await bed.post(forged))
    await expectUntouched(original, a)
    expect(answers.map((answer) => [answer.status, answer.body])).toEqual(
      Array(3).fill([400, { error: expect.objectContaining({ code: 'invalid_event' }) }]),
    )
  })
})

describe("within a tenant's own key prefix, the row's tenant still decides", () => {
  // A Telegram bot and one of its business accounts are two tenants, and the bot's id prefixes
  // both their keys: only the row's own tenant (its customer's) may edit or delete it.
  it("bot 777's edit and delete of its business account's message change nothing", async () => {
    const business = '777:biz:BC1'
    const original = await storedMessageOf('telegram', business, `${business}:7:${hex(3)}`)
    const [, edit, remove] = await forgedAs('777', original)
    for (const forged of [edit, remove]) {
      if (!forged) throw new Error('no forged event')
      const answer = await bed.post(forged)
      expect(answer.status, forged.kind).toBeLessThan(300)
      expect(answer.body.outcome, forged.kind).not.toBe('updated')
    }
    expect(await rowsOf('telegram', original.messageKey)).toEqual([
      { body: "B's own text", edited_at: null, deleted_at: null },
    ])
  })
})
