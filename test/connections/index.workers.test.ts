/**
 * The shared paths (`/webhooks/slack`, `/webhooks/whatsapp-cloud`, `/webhooks/messenger`,
 * `/webhooks/line`, and the API's keys) finding their connection through the index the origin
 * publishes (`idx:<channel>:<id>`): one connection's secrets tried, never every tenant's; tenant
 * A's secret never verifies B; every id the body names must be the connection's; no index entry
 * leaves the variables in charge, and where both name a tenant the registry wins.
 */
import { describe, expect, it } from 'vitest'
import { type ConnectionChannel, kvKeys } from '../../contract/connection'
import { API_TEST_KEY_SHA256, API_TEST_TENANT, apiDelivery } from '../../local/vendor-deliveries'
import { sha256Hex } from '../../shared/crypto'
import { GATEWAY, type Harness } from '../support/workerd/harness'
import { CASES, CASES_ENV, type ChannelCase, type Tenant } from './support/cases'
import { brokenKv, edgeHarness, inMs, kv, putConnection } from './support/edge'

const gateway = (overrides = {}) => edgeHarness({ ...CASES_ENV, ...overrides })
const shared = (channel: string) => `${GATEWAY}/webhooks/${channel}`

/** The id each channel's index holds of a tenant: its account, or its ids. */
const INDEXED_BY: Partial<Record<ConnectionChannel, (tenant: Tenant) => string[]>> = {
  slack: (t) => [t.account],
  line: (t) => [t.account],
  'whatsapp-cloud': (t) => t.ids,
  messenger: (t) => t.ids,
  instagram: (t) => t.ids,
}
const INDEXED = CASES.filter((c) => c.channel in INDEXED_BY)

async function putIndexed(c: ChannelCase, extra = {}) {
  const tenant = c.tenant()
  const secret = c.secret()
  const index = INDEXED_BY[c.channel]?.(tenant) ?? []
  const record = await putConnection(
    {
      channel: c.channel,
      account: tenant.account,
      ids: tenant.ids,
      secrets: [{ field: c.field, value: secret }],
      ...extra,
    },
    index,
  )
  return { record, tenant, secret }
}

async function nothingWritten(h: Harness): Promise<void> {
  expect(await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])).toEqual([])
  expect((await h.originCalls()).calls).toHaveLength(0)
}

describe.each(INDEXED)('$channel, by index on its shared path', (c) => {
  it('its own secret verifies, and the event names the connection', async () => {
    const h = gateway()
    const a = await putIndexed(c)
    const response = await h.deliver(await c.request(shared(c.channel), a.tenant, a.secret))
    expect(response.status).toBe(200)
    const { calls } = await h.originCalls()
    expect(calls.map((call) => call.connection)).toEqual([{ id: a.record.id, version: 1 }])
  })

  it("tenant A's secret for B's body: 401, nothing written", async () => {
    const h = gateway()
    const a = await putIndexed(c)
    const b = await putIndexed(c)
    const response = await h.deliver(await c.request(shared(c.channel), b.tenant, a.secret))
    expect(response.status).toBe(401)
    await nothingWritten(h)
  })

  it('disabled: 403; and the variables cannot vouch for it instead', async () => {
    const a = await putIndexed(c, { status: 'disabled' })
    // The same tenant in the variables, with the same secret: the registry wins.
    const h = gateway(variablesFor(c, a.tenant, a.secret))
    const response = await h.deliver(await c.request(shared(c.channel), a.tenant, a.secret))
    expect(response.status).toBe(403)
    await nothingWritten(h)
  })

  it('no index entry: the variables serve it, as before, and the event names no connection', async () => {
    const tenant = c.tenant()
    const secret = c.secret()
    const h = gateway(variablesFor(c, tenant, secret))
    const response = await h.deliver(await c.request(shared(c.channel), tenant, secret))
    expect(response.status).toBe(200)
    expect((await h.originCalls()).calls.map((call) => call.connection)).toEqual([undefined])
  })

  it('KV out of reach for a body it would index: the retry answer', async () => {
    const a = await putIndexed(c)
    const h = gateway({ CONNECTIONS: brokenKv })
    const response = await h.deliver(await c.request(shared(c.channel), a.tenant, a.secret))
    expect(response.status).toBe(503)
    await nothingWritten(h)
  })
})

/** The per-tenant variables that list `tenant` with `secret` (and its ids). */
function variablesFor(c: ChannelCase, tenant: Tenant, secret: string): Record<string, string> {
  const ids = tenant.ids.join('|')
  switch (c.channel) {
    case 'slack':
      return {
        SLACK_SIGNING_SECRET: '',
        SLACK_SIGNING_SECRETS_BY_APP: `${tenant.account}=${secret}`,
        SLACK_TEAMS_BY_APP: `${tenant.account}=${ids}`,
      }
    case 'line':
      return { LINE_CHANNEL_SECRETS_BY_DESTINATION: `${tenant.account}=${secret}` }
    case 'whatsapp-cloud':
      return {
        WHATSAPP_APP_SECRETS_BY_APP: `${tenant.account}=${secret}`,
        WHATSAPP_PHONE_NUMBERS_BY_APP: `${tenant.account}=${ids}`,
      }
    case 'messenger':
      return {
        MESSENGER_APP_SECRETS_BY_APP: `${tenant.account}=${secret}`,
        MESSENGER_PAGES_BY_APP: `${tenant.account}=${ids}`,
      }
    case 'instagram':
      return {
        INSTAGRAM_APP_SECRETS_BY_APP: `${tenant.account}=${secret}`,
        INSTAGRAM_ACCOUNTS_BY_APP: `${tenant.account}=${ids}`,
      }
    default:
      throw new Error(`no variables for ${c.channel}`)
  }
}

describe('after verifying, every id the body names must be the connection’s', () => {
  const byChannel = (name: string) => CASES.find((c) => c.channel === name) as ChannelCase

  it("Slack: app A's signature naming app A and B's workspace: 401", async () => {
    const slack = byChannel('slack')
    const h = gateway()
    const a = await putIndexed(slack)
    const b = await putIndexed(slack)
    const mixed = { account: a.tenant.account, ids: b.tenant.ids }
    const response = await h.deliver(await slack.request(shared('slack'), mixed, a.secret))
    expect(response.status).toBe(401)
    await nothingWritten(h)
  })

  it("WhatsApp and Messenger: a batch whose first id is A's and whose next is B's: 401", async () => {
    for (const name of ['whatsapp-cloud', 'messenger']) {
      const c = byChannel(name)
      const h = gateway()
      const a = await putIndexed(c)
      const b = await putIndexed(c)
      // The first id picks A; B's id rides along in the same signed batch.
      const first = await c.request(shared(name), a.tenant, a.secret)
      const body = JSON.parse(await first.text()) as { entry: Array<Record<string, unknown>> }
      const second = JSON.parse(
        await (await c.request(shared(name), b.tenant, a.secret)).text(),
      ) as { entry: Array<Record<string, unknown>> }
      body.entry.push(...second.entry)
      const { metaRequest } = await import('../../local/vendor-deliveries')
      const response = await h.deliver(await metaRequest(shared(name), body, a.secret))
      expect(response.status, name).toBe(401)
      await nothingWritten(h)
    }
  })
})

describe('the API: a key the registry indexes is its connection’s', () => {
  const post = (key: string) =>
    new Request(`${GATEWAY}/v1/messages`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'idempotency-key': `"k-${crypto.randomUUID()}"`,
      },
      body: JSON.stringify({ customer: { id: 'c1' }, text: 'hello' }),
    })
  async function putApi(keys: Array<{ value: string; notAfter?: string }>, extra = {}) {
    const tenant = `t-${crypto.randomUUID().slice(0, 8)}`
    const hashes = await Promise.all(keys.map((k) => sha256Hex(k.value)))
    const record = await putConnection(
      {
        channel: 'api',
        account: tenant,
        ids: hashes,
        secrets: keys.map((k) => ({ field: 'api_key', value: k.value, notAfter: k.notAfter })),
        ...extra,
      },
      hashes,
    )
    return { tenant, record }
  }

  it('each key posts as its own tenant, the event names the connection; rotation; disabled', async () => {
    const h = gateway()
    const [fresh, old, expired] = ['new', 'old', 'expired'].map(
      (k) => `${k}-${crypto.randomUUID()}`,
    )
    const a = await putApi([
      { value: fresh as string },
      { value: old as string, notAfter: inMs(60_000) },
      { value: expired as string, notAfter: inMs(-1_000) },
    ])
    const bKey = `b-${crypto.randomUUID()}`
    const b = await putApi([{ value: bKey }])
    expect((await h.deliver(post(fresh as string))).status).toBe(201)
    expect((await h.deliver(post(old as string))).status).toBe(201)
    expect((await h.deliver(post(expired as string))).status).toBe(401)
    expect((await h.deliver(post(bKey))).status).toBe(201)
    const dKey = `d-${crypto.randomUUID()}`
    await putApi([{ value: dKey }], { status: 'disabled' })
    expect((await h.deliver(post(dKey))).status).toBe(401)
    const { calls } = await h.originCalls()
    const ref = (x: typeof a) => [x.tenant, { id: x.record.id, version: 1 }]
    expect(calls.map((call) => [call.messageKey.split(':')[0], call.connection])).toEqual([
      ref(a),
      ref(a),
      ref(b),
    ])
  })

  /** A connection that knows its keys only by their hashes (API_KEYS imported). */
  async function putByHash(keys: string[], extra = {}) {
    const tenant = `t-${crypto.randomUUID().slice(0, 8)}`
    const hashes = await Promise.all(keys.map((k) => sha256Hex(k)))
    const secrets = hashes.map((value) => ({ field: 'api_key_hash', value }))
    const record = await putConnection(
      { channel: 'api', account: tenant, ids: hashes, secrets, ...extra },
      hashes,
    )
    return { tenant, record }
  }

  it('a key whose hash was imported posts as its tenant; not as another; disabled: 401', async () => {
    const h = gateway()
    const [aKey, bKey, dKey] = ['a', 'b', 'd'].map((k) => `${k}-${crypto.randomUUID()}`)
    const a = await putByHash([aKey as string])
    const b = await putByHash([bKey as string])
    await putByHash([dKey as string], { status: 'disabled' })
    // b's key, under a's index entry: a's record does not hold b's hash.
    const stray = `stray-${crypto.randomUUID()}`
    await kv().put(kvKeys.index('api', await sha256Hex(stray)), a.record.id)
    expect((await h.deliver(post(aKey as string))).status).toBe(201)
    expect((await h.deliver(post(bKey as string))).status).toBe(201)
    expect((await h.deliver(post(stray))).status).toBe(401)
    expect((await h.deliver(post(dKey as string))).status).toBe(401)
    const { calls } = await h.originCalls()
    expect(calls.map((call) => [call.messageKey.split(':')[0], call.connection])).toEqual([
      [a.tenant, { id: a.record.id, version: 1 }],
      [b.tenant, { id: b.record.id, version: 1 }],
    ])
  })

  it('a hash-only record whose ids list a hash but whose live secrets do not: 401', async () => {
    const h = gateway()
    const key = `k-${crypto.randomUUID()}`
    const hash = await sha256Hex(key)
    await putConnection(
      {
        channel: 'api',
        account: `t-${crypto.randomUUID().slice(0, 8)}`,
        ids: [hash],
        secrets: [{ field: 'api_key_hash', value: hash, notAfter: inMs(-1_000) }],
      },
      [hash],
    )
    expect((await h.deliver(post(key))).status).toBe(401)
    expect((await h.originCalls()).calls).toHaveLength(0)
  })

  it("an index entry pointing at a connection that does not list the key's hash: 401", async () => {
    const h = gateway()
    const a = await putApi([{ value: `a-${crypto.randomUUID()}` }])
    const stray = `stray-${crypto.randomUUID()}`
    await kv().put(kvKeys.index('api', await sha256Hex(stray)), a.record.id)
    expect((await h.deliver(post(stray))).status).toBe(401)
    expect((await h.originCalls()).calls).toHaveLength(0)
  })

  it('no index entry: API_KEYS, as before; KV out of reach: 503', async () => {
    const API_KEYS = JSON.stringify({ [API_TEST_KEY_SHA256]: API_TEST_TENANT })
    const h = gateway({ API_KEYS })
    expect((await h.deliver(await apiDelivery().request(GATEWAY))).status).toBe(201)
    const down = gateway({ API_KEYS, CONNECTIONS: brokenKv })
    expect((await down.deliver(await apiDelivery().request(GATEWAY))).status).toBe(503)
  })
})
