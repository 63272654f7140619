/**
 * The isolate's memo of connections, bounded in time: a change at the origin (a connection
 * disabled, a new version) is enforced once CONNECTION_CACHE_SECONDS has passed, without a
 * restart; and a replaced secret stops verifying at its notAfter even while the memo (or a
 * stale KV copy) still holds the record that lists it.
 */
import { describe, expect, it } from 'vitest'
import { kvKeys, newConnectionId } from '../../contract/connection'
import { KV_MISSES_PER_SECOND, LookupMemo } from '../../worker/connections/memo'
import { connectionById } from '../../worker/connections/reader'
import type { Env } from '../../worker/env'
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

/** A KV binding over the real one that counts its gets. */
function countingEnv(): { env: Env; gets: string[] } {
  const gets: string[] = []
  const real = kv()
  const binding = {
    get: (key: string, options: unknown) => {
      gets.push(key)
      return real.get(key, options as KVNamespaceGetOptions<'text'>)
    },
  } as unknown as KVNamespace
  return { env: { CONNECTIONS: binding } as unknown as Env, gets }
}

describe('requests nobody signed cannot run up KV reads or push out hot records', () => {
  it('past the KV budget of a second: the retry answer without a get; a held record still served', async () => {
    const { env, gets } = countingEnv()
    const hot = await putConnection({
      channel: 'telegram',
      account: tg.tenant().account,
      secrets: [],
    })
    expect((await connectionById(env, 'telegram', hot.id)).kind).toBe('found')
    const random = Array.from({ length: KV_MISSES_PER_SECOND + 50 }, () => newConnectionId())
    const answers = await Promise.all(random.map((id) => connectionById(env, 'telegram', id)))
    expect(gets).toHaveLength(KV_MISSES_PER_SECOND)
    expect(answers.filter((a) => a.kind === 'none')).toHaveLength(KV_MISSES_PER_SECOND - 1)
    expect(answers.filter((a) => a.kind === 'unavailable')).toHaveLength(51)
    expect((await connectionById(env, 'telegram', hot.id)).kind).toBe('found')
    expect(gets).toHaveLength(KV_MISSES_PER_SECOND)
  })

  it('found answers least-recently-used out, apart from absent ones', async () => {
    const limits = { entries: 2, negatives: 2, missesPerSecond: 1_000, cacheMs: 60_000 }
    const memo = new LookupMemo<{ kind: string }>(limits)
    let reads = 0
    const read = (kind: string) => () => {
      reads += 1
      return Promise.resolve({ kind })
    }
    await memo.get('a', read('found'))
    await memo.get('b', read('found'))
    await memo.get('a', read('found')) // a hit: a is now the most recent
    await memo.get('c', read('found')) // b goes, not a
    for (let i = 0; i < 10; i++) await memo.get(`x${i}`, read('none'))
    expect(reads).toBe(13)
    await memo.get('a', read('found'))
    await memo.get('c', read('found'))
    expect(reads).toBe(13)
    await memo.get('b', read('found'))
    expect(reads).toBe(14)
  })

  it('requests that miss at once each read: none waits on a get another request started (workerd binds it to that request)', async () => {
    const limits = { entries: 10, negatives: 10, missesPerSecond: 1_000, cacheMs: 60_000 }
    const memo = new LookupMemo<{ kind: string }>(limits)
    const gets: Array<(kind: string) => void> = []
    const read = () =>
      new Promise<{ kind: string }>((resolve) => gets.push((kind) => resolve({ kind })))
    const first = memo.get('k', read)
    const second = memo.get('k', read)
    expect(gets).toHaveLength(2)
    for (const answer of gets) answer('found')
    expect(await first).toEqual({ kind: 'found' })
    expect(await second).toEqual({ kind: 'found' })
    // Once one has answered, the held answer serves: no third get.
    expect(await memo.get('k', read)).toEqual({ kind: 'found' })
    expect(gets).toHaveLength(2)
  })
})
