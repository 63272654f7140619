/**
 * migrations/20261201000004_telegram_bot_scoped_keys.sql: Telegram rows stored under the old key
 * `{chat.id}:{message_id}` move to `{bot id}:{chat.id}:{message_id}` (the bot is the customer's
 * tenant), so a replay or an edit after the upgrade finds them instead of making a second row.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { migrate } from '../../ops/migrate'
import { openSqlTestbed, type SqlTestbed } from '../support/sql-testbed'

let bed: SqlTestbed

beforeAll(async () => {
  bed = await openSqlTestbed()
})

afterAll(async () => {
  await bed?.close()
})

const insert: SqlTestbed['insert'] = (text, values) => bed.insert(text, values)

async function message(conversationId: string, channel: string, key: string): Promise<string> {
  return insert(
    `INSERT INTO messages (conversation_id, channel, channel_message_id, sender_external_id, body,
                           payload_hash, first_delivery_key, occurred_at)
     VALUES ($1, $2, $3, '7', 'x', '0123456789abcdef', 'd', now())`,
    [conversationId, channel, key],
  )
}

async function keyOf(id: string): Promise<string> {
  const { rows } = await bed.sql.query<{ key: string }>(
    'SELECT channel_message_id AS key FROM messages WHERE id = $1',
    [id],
  )
  return rows[0]?.key ?? ''
}

describe('Telegram bot-scoped message keys', () => {
  it('rewrites old keys under the bot, leaves new keys, other channels and taken keys alone', async () => {
    const conversation = async (channel: string, tenant: string) => {
      const customer = await insert(
        'INSERT INTO customers (channel, tenant, external_id) VALUES ($1, $2, $3)',
        [channel, tenant, '7'],
      )
      return insert('INSERT INTO conversations (customer_id, channel) VALUES ($1, $2)', [
        customer,
        channel,
      ])
    }
    const botA = await conversation('telegram', '4242')
    const botB = await conversation('telegram', '5151')
    const sms = await conversation('sms', 'AC1')
    const old = await message(botA, 'telegram', '-1001:42')
    const sameIdOtherBot = await message(botB, 'telegram', '-1001:43')
    const already = await message(botA, 'telegram', '4242:9:1')
    // The same message arrived again under its new key before the migration ran: two rows, and
    // the old one cannot take the new key.
    const stale = await message(botA, 'telegram', '9:2')
    const fresh = await message(botA, 'telegram', '4242:9:2')
    const other = await message(sms, 'sms', '12:34')

    await bed.sql.query("DELETE FROM schema_migrations WHERE version = '20261201000004'")
    await migrate(bed.database.url)

    expect(
      await Promise.all([old, sameIdOtherBot, already, stale, fresh, other].map(keyOf)),
    ).toEqual(['4242:-1001:42', '5151:-1001:43', '4242:9:1', '9:2', '4242:9:2', '12:34'])
  })
})
