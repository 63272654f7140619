/**
 * Deletes and undeletes (Teams' softDeleteMessage / undeleteMessage) ordered by their time, like
 * edits: the later of a message's latest delete and latest undelete is its state, whatever order
 * they arrive in, replays included, and whether they come before the message (its tombstone) or
 * after. Single ingest here; batch-ingest.pg.test.ts checks batches answer the same.
 */
import { describe, expect, it } from 'vitest'
import type { InboundEvent } from '../../contract/event'
import { fileTestbed } from '../support/for-file'
import { eventFixture } from '../support/origin'

const bed = fileTestbed()

const at = (second: number) => new Date(Date.UTC(2026, 11, 3, 9, 0, second)).toISOString()

/** A Teams message, and its delete or undelete at `second`. */
async function teamsMessage() {
  const messageKey = `8e0b5c8c-1f4e-4b7a-9d6a-3c2f1e0d9b8a:msteams:c${Math.random().toString(16).slice(2, 18)}:1666977568748`
  const base = { channel: 'teams', tenant: '8e0b5c8c-1f4e-4b7a-9d6a-3c2f1e0d9b8a', messageKey }
  const message = await eventFixture({ ...base, body: 'the original', occurredAt: at(0) })
  const change = (kind: 'delete' | 'undelete', second: number) =>
    eventFixture({
      ...base,
      kind,
      body: '',
      occurredAt: at(second),
      deliveryKey: `dedup:teams:x:${kind}:${second}`,
    })
  return { messageKey, message, change }
}

async function state(messageKey: string) {
  const { rows } = await bed.sql.query<{ body: string; deleted: boolean }>(
    `SELECT body, deleted_at IS NOT NULL AS deleted FROM messages WHERE channel_message_id = $1`,
    [messageKey],
  )
  return rows
}

const post = async (events: InboundEvent[]) => {
  const answers: string[] = []
  for (const event of events) answers.push(String((await bed.post(event)).body.outcome))
  return answers
}

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]]
  return items.flatMap((item, i) =>
    permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]),
  )
}

describe('undelete', () => {
  it('restores a deleted message; a replay changes nothing', async () => {
    const { messageKey, message, change } = await teamsMessage()
    const del = await change('delete', 4)
    const undelete = await change('undelete', 9)
    expect(await post([message, del])).toEqual(['created', 'updated'])
    expect(await state(messageKey)).toEqual([{ body: 'the original', deleted: true }])
    expect(await post([undelete, undelete, del])).toEqual(['updated', 'duplicate', 'duplicate'])
    expect(await state(messageKey)).toEqual([{ body: 'the original', deleted: false }])
  })

  it('a late undelete (older than the delete) does not undo the newer delete', async () => {
    // Microsoft's own examples (msteams-docs conversation-messages.md) time the undelete at
    // 17:19:39 and the delete at 17:19:43: so ordered, the message stays deleted.
    const { messageKey, message, change } = await teamsMessage()
    expect(await post([message, await change('delete', 43), await change('undelete', 39)])).toEqual(
      ['created', 'updated', 'duplicate'],
    )
    expect(await state(messageKey)).toEqual([{ body: 'the original', deleted: true }])
  })

  it('deleted, restored, deleted again: deleted, in any of the six orders, the message first or last', async () => {
    for (const order of permutations([0, 1, 2])) {
      for (const messageFirst of [true, false]) {
        const { messageKey, message, change } = await teamsMessage()
        const changes = [
          await change('delete', 3),
          await change('undelete', 6),
          await change('delete', 9),
        ]
        const ordered = order.map((i) => changes[i] as InboundEvent)
        await post(messageFirst ? [message, ...ordered] : [...ordered, message])
        expect(await state(messageKey), `${order} ${messageFirst}`).toEqual([
          { body: 'the original', deleted: true },
        ])
      }
    }
  })

  it('deleted then restored: restored in either order, and before its message lands too', async () => {
    for (const order of permutations([0, 1])) {
      for (const messageFirst of [true, false]) {
        const { messageKey, message, change } = await teamsMessage()
        const changes = [await change('delete', 3), await change('undelete', 6)]
        const ordered = order.map((i) => changes[i] as InboundEvent)
        await post(messageFirst ? [message, ...ordered] : [...ordered, message])
        expect(await state(messageKey), `${order} ${messageFirst}`).toEqual([
          { body: 'the original', deleted: false },
        ])
      }
    }
  })

  it('an undelete of a message never stored or deleted is remembered: an older delete cannot hide it', async () => {
    const { messageKey, message, change } = await teamsMessage()
    expect(await post([await change('undelete', 6)])).toEqual(['ignored'])
    expect(await post([message, await change('delete', 3)])).toEqual(['created', 'duplicate'])
    expect(await state(messageKey)).toEqual([{ body: 'the original', deleted: false }])
  })
})

describe('a delete and an undelete of the same time', () => {
  it('the delete stands, in either order', async () => {
    for (const deleteFirst of [true, false]) {
      const { messageKey, message, change } = await teamsMessage()
      const pair = [await change('delete', 5), await change('undelete', 5)]
      await post([message, ...(deleteFirst ? pair : pair.reverse())])
      expect(await state(messageKey), `delete first: ${deleteFirst}`).toEqual([
        { body: 'the original', deleted: true },
      ])
    }
  })
})
