/**
 * The connection routes (`/webhooks/<channel>/c/<id>`) in workerd, through the real Worker, with
 * real vendor signatures and connections put into its KV namespace as the origin's publisher puts
 * them (secrets sealed under EDGE_KEKS): a connection put now verifies its first webhook without
 * a restart; one tenant's secret never verifies another's route; rotation; disabled; and every
 * way the record can be missing or unusable is the channel's retry answer, never a 200.
 */
import { describe, expect, it } from 'vitest'
import { kvKeys, newConnectionId } from '../../contract/connection'
import type { Harness } from '../support/workerd/harness'
import { CASES, CASES_ENV } from './support/cases'
import {
  brokenKv,
  edgeHarness,
  inMs,
  OTHER_EDGE_KEKS,
  putConnection,
  routeOf,
  type SecretSpec,
  silentKv,
} from './support/edge'

const gateway = (overrides = {}) => edgeHarness({ ...CASES_ENV, ...overrides })

async function expectNothingWritten(h: Harness): Promise<void> {
  expect(await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])).toEqual([])
  expect((await h.originCalls()).calls).toHaveLength(0)
}

describe.each(CASES)('$channel, by route id', (c) => {
  const put = (
    tenant = c.tenant(),
    secrets: SecretSpec[] = [{ field: c.field, value: c.secret() }],
    extra = {},
  ) =>
    putConnection({
      channel: c.channel,
      account: tenant.account,
      ids: tenant.ids,
      secrets,
      ...extra,
    }).then((record) => ({ record, tenant, secret: secrets[0]?.value as string }))

  it('a connection put into KV verifies its first webhook, and the event names it', async () => {
    const h = gateway()
    // The Worker runs before the connection exists: no restart, no new env.
    const early = await h.deliver(
      await c.request(routeOf(c.channel, newConnectionId()), c.tenant(), 'x'),
    )
    expect(early.status).toBe(503)
    const { record, tenant, secret } = await put()
    const response = await h.deliver(await c.request(routeOf(c.channel, record.id), tenant, secret))
    expect(response.status).toBe(200)
    const { calls } = await h.originCalls()
    expect(calls).toHaveLength(1)
    expect(calls[0]?.connection).toEqual({ id: record.id, version: 1 })
  })

  it("tenant A's secret on B's route: 401, nothing written", async () => {
    const h = gateway()
    const a = await put()
    const b = await put()
    // A's own body (its account, its ids) and B's, each signed with A's secret.
    for (const tenant of [a.tenant, b.tenant]) {
      const request = await c.request(routeOf(c.channel, b.record.id), tenant, a.secret)
      expect((await h.deliver(request)).status).toBe(401)
    }
    await expectNothingWritten(h)
  })

  it('rotation: both secrets inside the overlap, only the new one after it', async () => {
    const h = gateway()
    const tenant = c.tenant()
    const [fresh, old, expired] = [c.secret(), c.secret(), c.secret()]
    const { record } = await put(tenant, [
      { field: c.field, value: fresh },
      { field: c.field, value: old, notAfter: inMs(3_600_000) },
      { field: c.field, value: expired, notAfter: inMs(-1_000) },
    ])
    const url = routeOf(c.channel, record.id)
    expect((await h.deliver(await c.request(url, tenant, fresh))).status).toBe(200)
    expect((await h.deliver(await c.request(url, tenant, old))).status).toBe(200)
    expect((await h.deliver(await c.request(url, tenant, expired))).status).toBe(401)
    expect((await h.originCalls()).calls).toHaveLength(2)
  })

  it('disabled: 403, nothing written', async () => {
    const h = gateway()
    const tenant = c.tenant()
    const secret = c.secret()
    const { record } = await put(tenant, [{ field: c.field, value: secret }], {
      status: 'disabled',
    })
    const response = await h.deliver(await c.request(routeOf(c.channel, record.id), tenant, secret))
    expect(response.status).toBe(403)
    await expectNothingWritten(h)
  })
})

describe('a connection route whose connection cannot be used: the retry answer, never a 200', () => {
  const telegram = CASES.find((c) => c.channel === 'telegram')
  if (!telegram) throw new Error('no telegram case')
  const attempt = async (h: Harness, id: string, secret = 'tg-secret') =>
    h.deliver(await telegram.request(routeOf('telegram', id), telegram.tenant(), secret))
  const putTelegram = (extra = {}) =>
    putConnection({
      channel: 'telegram',
      account: '7000000001',
      secrets: [{ field: 'secret_token', value: 'tg-secret' }],
      ...extra,
    })

  it("an unknown id, a malformed id, another channel's record", async () => {
    const h = gateway()
    const slack = await putConnection({
      channel: 'slack',
      account: 'A0OTHER',
      ids: ['T0OTHER'],
      secrets: [{ field: 'signing_secret', value: 'tg-secret' }],
    })
    for (const id of [newConnectionId(), 'not-an-id', slack.id]) {
      const response = await attempt(h, id)
      expect(response.status, id).toBe(503)
      expect(response.headers.get('retry-after')).toBe('1')
    }
    await expectNothingWritten(h)
  })

  it('KV unreachable, KV slow past its bound, no binding at all', async () => {
    const { id } = await putTelegram()
    for (const CONNECTIONS of [brokenKv, silentKv, undefined]) {
      const h = gateway({ CONNECTIONS })
      expect((await attempt(h, id)).status).toBe(503)
      await expectNothingWritten(h)
    }
  })

  it('a record the Worker cannot open (another KEK, no EDGE_KEKS) or parse', async () => {
    const sealedElsewhere = await putTelegram({ keks: OTHER_EDGE_KEKS })
    expect((await attempt(gateway(), sealedElsewhere.id)).status).toBe(503)
    const { id } = await putTelegram()
    const noKeys = gateway({ EDGE_KEKS: '' })
    expect((await attempt(noKeys, id)).status).toBe(503)
    const broken = newConnectionId()
    const { kv } = await import('./support/edge')
    await kv().put(kvKeys.connection(broken), JSON.stringify({ v: 1, id: broken, secrets: 'x' }))
    expect((await attempt(gateway(), broken)).status).toBe(503)
    await kv().put(kvKeys.connection(broken), '{not json')
    expect((await attempt(gateway(), broken)).status).toBe(503)
  })

  it('a record copied under another id (its secrets bound to the first) does not open', async () => {
    const original = await putTelegram()
    const copy = newConnectionId()
    const { kv } = await import('./support/edge')
    await kv().put(kvKeys.connection(copy), JSON.stringify({ ...original, id: copy }))
    expect((await attempt(gateway(), copy)).status).toBe(503)
    expect((await attempt(gateway(), original.id)).status).toBe(200)
  })
})
