/**
 * Event channel names are data (issue 24): a channel the contract and the schema have never heard
 * of is stored, deduplicated, edited and deleted as the others are, with no edit of a list and no
 * migration; a name not of the safe form is refused, by the contract and by Postgres itself.
 */
import { describe, expect, it } from 'vitest'
import { CHANNEL_NAME, parseInboundEvent } from '../../contract/event'
import { fileTestbed } from '../support/for-file'
import { eventFixture } from '../support/origin'

const bed = fileTestbed()

describe('an event channel no list names', () => {
  it('is stored once, its replay a duplicate, its edit and delete applied', async () => {
    const channel = 'brand-new-7'
    const as = { channel, tenant: 'bot1', messageKey: `bot1:m${Date.now()}` }
    const event = await eventFixture({ ...as, body: 'first' })
    expect(parseInboundEvent(event).ok).toBe(true)
    expect((await bed.post(event)).status).toBe(201)
    expect((await bed.post(event)).body).toMatchObject({ outcome: 'duplicate' })
    const later = new Date(Date.parse(event.occurredAt) + 1_000).toISOString()
    const edit = await eventFixture({ ...as, kind: 'edit', body: 'second', occurredAt: later })
    expect((await bed.post(edit)).body).toMatchObject({ outcome: 'updated' })
    const remove = await eventFixture({ ...as, kind: 'delete', body: '', occurredAt: later })
    expect((await bed.post(remove)).status).toBeLessThan(300)
    const { rows } = await bed.sql.query(
      `SELECT m.body, m.deleted_at IS NOT NULL AS deleted, c.channel AS conversation
         FROM messages m JOIN conversations c ON c.id = m.conversation_id
        WHERE m.channel = $1 AND m.channel_message_id = $2`,
      [channel, as.messageKey],
    )
    expect(rows).toEqual([{ body: 'second', deleted: true, conversation: channel }])
  })

  it.each(['Line', 'line_2', '9line', 'has space', 'a'.repeat(33), ''])(
    '%j is no channel name: the contract refuses it',
    async (channel) => {
      expect(CHANNEL_NAME.test(channel)).toBe(false)
      const event = await eventFixture({ channel, tenant: 'bot1', messageKey: 'bot1:m1' })
      expect(parseInboundEvent(event)).toMatchObject({ ok: false })
      const answer = await bed.post(event)
      expect(answer.status).toBe(400)
      expect(await bed.count('messages', 'channel = $1', [channel])).toBe(0)
    },
  )

  it('Postgres refuses a name not of the form, and no constraint lists the names', async () => {
    const refused = (sql: string) =>
      bed.sql.query(sql).then(
        () => 'stored',
        (err: { code?: string }) => err.code,
      )
    expect(
      await refused(
        `INSERT INTO customers (channel, tenant, external_id) VALUES ('Bad Name', 't', 'x')`,
      ),
    ).toBe('23514')
    expect(
      await refused(
        `INSERT INTO customers (channel, tenant, external_id) VALUES ('new-one', 't', 'x')`,
      ),
    ).toBe('stored')
    const { rows } = await bed.sql.query(
      `SELECT conrelid::regclass::text AS table, pg_get_constraintdef(oid) AS def
         FROM pg_constraint
        WHERE contype = 'c' AND conrelid::regclass::text IN ('customers', 'conversations', 'messages')
          AND pg_get_constraintdef(oid) LIKE '%channel%'
        ORDER BY 1`,
    )
    expect(rows.map((row) => row.table)).toEqual(['conversations', 'customers', 'messages'])
    for (const row of rows) expect(row.def).not.toContain('slack')
  })
})
