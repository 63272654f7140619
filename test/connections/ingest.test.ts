/**
 * The origin refuses events of a disabled or deleted registry connection (the edge may hold its
 * old record for minutes): 422 `connection_disabled` and no row, alone, in a batch and on a
 * replay's path (ingestEvent). An active connection's event is stored, and the version the edge
 * verified with is recorded for the console.
 */
import { describe, expect, it } from 'vitest'
import { batchBody } from '../../contract/event-batch'
import { signForward } from '../../contract/forward-signature'
import * as registry from '../../origin/connections/service'
import { ingestEvent } from '../../origin/ingest'
import { importKeyRing, newKekEntry } from '../../shared/envelope'
import { fileTestbed, forFile } from '../support/for-file'
import { eventFixture, openTestDb } from '../support/origin'

const tb = fileTestbed()
const bed = forFile(
  async () => {
    const db = openTestDb(tb.databaseUrl)
    return { db, deps: { db, originKeys: await importKeyRing(newKekEntry('o1')) } }
  },
  async ({ db }) => db.close(),
)

let n = 0
async function telegram() {
  const account = String(8_100_000 + n++)
  const view = await registry.createConnection(
    bed.deps,
    { channel: 'telegram', account, secrets: { secret_token: 'tg-token-0001' } },
    'test',
  )
  return { id: view.id, account }
}
const eventOf = (account: string, id: string, version: number) =>
  eventFixture({
    channel: 'telegram',
    tenant: account,
    messageKey: `${account}:chat:${n++}`,
    connection: { id, version },
  })

describe('events of registry connections', () => {
  it('an active connection: stored, and the edge version recorded', async () => {
    const c = await telegram()
    const answer = await tb.post(await eventOf(c.account, c.id, 1))
    expect(answer.status).toBe(201)
    const view = await registry.showConnection(bed.deps, c.id)
    expect(view.edge.seenVersion).toBe(1)
    expect(view.edge.seenAt).not.toBeNull()
  })

  it('a disabled connection: 422 connection_disabled, no row; enabled again it is taken', async () => {
    const c = await telegram()
    await registry.disableConnection(bed.deps, c.id, 'test')
    const event = await eventOf(c.account, c.id, 1)
    const answer = await tb.post(event)
    expect(answer.status).toBe(422)
    expect(answer.body).toMatchObject({ error: { code: 'connection_disabled' } })
    expect(await tb.count('messages', 'channel_message_id = $1', [event.messageKey])).toBe(0)
    await expect(ingestEvent(bed.db, event)).rejects.toMatchObject({ code: 'connection_disabled' })
    await registry.enableConnection(bed.deps, c.id, 'test')
    expect((await tb.post(event)).status).toBe(201)
  })

  it('a deleted connection, or one the registry never had: 422, no row', async () => {
    const c = await telegram()
    await registry.deleteConnection(bed.deps, c.id, 'test')
    const deleted = await eventOf(c.account, c.id, 2)
    expect((await tb.post(deleted)).status).toBe(422)
    const unknown = await eventOf(c.account, `c_${'a'.repeat(26)}`, 1)
    expect((await tb.post(unknown)).status).toBe(422)
    expect(
      await tb.count('messages', 'channel_message_id = ANY($1)', [
        [deleted.messageKey, unknown.messageKey],
      ]),
    ).toBe(0)
  })

  it('in a batch, the disabled connection’s event alone is refused', async () => {
    const on = await telegram()
    const off = await telegram()
    await registry.disableConnection(bed.deps, off.id, 'test')
    const events = [await eventOf(off.account, off.id, 1), await eventOf(on.account, on.id, 1)]
    const body = batchBody(events.map((e) => JSON.stringify(e)))
    const headers = await signForward(tb.secret, body, undefined, {
      method: 'POST',
      path: '/v1/events/batch',
    })
    const res = await fetch(`${tb.origin.url}/v1/events/batch`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
      signal: AbortSignal.timeout(30_000),
    })
    const answer = (await res.json()) as { results: { status: number; error?: { code: string } }[] }
    expect(answer.results.map((r) => r.status)).toEqual([422, 201])
    expect(answer.results[0]?.error?.code).toBe('connection_disabled')
    expect(await tb.count('messages', 'channel_message_id = $1', [events[0]?.messageKey])).toBe(0)
  })
})
