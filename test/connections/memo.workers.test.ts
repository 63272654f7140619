/**
 * The isolate's memo of connections, bounded in time: a change at the origin (a connection
 * disabled, a new version) is enforced once CONNECTION_CACHE_SECONDS has passed, without a
 * restart; and a replaced secret stops verifying at its notAfter even while the memo (or a
 * stale KV copy) still holds the record that lists it.
 */
import { describe, expect, it } from 'vitest'
import { kvKeys } from '../../contract/connection'
import { CASES } from './support/cases'
import { edgeHarness, edgeRecord, inMs, kv, putConnection, routeOf } from './support/edge'

const found = CASES.find((c) => c.channel === 'telegram')
if (!found) throw new Error('no telegram case')
const tg = found
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('the memo of connections', () => {
  it('a connection disabled at the origin is refused once the memo entry is past its seconds', async () => {
    const h = edgeHarness({ CONNECTION_CACHE_SECONDS: '2' })
    const tenant = tg.tenant()
    const spec = {
      channel: 'telegram' as const,
      account: tenant.account,
      secrets: [{ field: 'secret_token', value: 'tg-memo-secret' }],
    }
    const record = await putConnection(spec)
    const send = async () =>
      (await h.deliver(await tg.request(routeOf('telegram', record.id), tenant, 'tg-memo-secret')))
        .status
    expect(await send()).toBe(200)
    const disabled = await edgeRecord({ ...spec, id: record.id, status: 'disabled', version: 2 })
    await kv().put(kvKeys.connection(record.id), JSON.stringify(disabled))
    // Inside the memo's two seconds the isolate still holds version 1 ...
    expect(await send()).toBe(200)
    await sleep(2_100)
    // ... and past it, version 2.
    expect(await send()).toBe(403)
    const versions = (await h.originCalls()).calls.map((call) => call.connection?.version)
    expect(versions).toEqual([1, 1])
  })

  it('a replaced secret stops at its notAfter though the memo still holds the record', async () => {
    const h = edgeHarness()
    const tenant = tg.tenant()
    const record = await putConnection({
      channel: 'telegram',
      account: tenant.account,
      secrets: [
        { field: 'secret_token', value: 'tg-current' },
        { field: 'secret_token', value: 'tg-replaced', notAfter: inMs(400) },
      ],
    })
    const send = async (secret: string) =>
      (await h.deliver(await tg.request(routeOf('telegram', record.id), tenant, secret))).status
    expect(await send('tg-replaced')).toBe(200)
    await sleep(500)
    expect(await send('tg-replaced')).toBe(401)
    expect(await send('tg-current')).toBe(200)
  })
})
