/**
 * The registry wins on every shared path, not only where a body is indexed: Telegram (the path's
 * bot), WeChat (the path's account) and Twilio (the AccountSid of a form or of a JSON body) ask
 * `idx:<channel>:<account>` before their variables, so a tenant imported into the registry and
 * then disabled is refused (403), never verified by its old variable. An index entry whose
 * record KV does not hold is the retry answer (503), not the variables.
 */
import { describe, expect, it } from 'vitest'
import { kvKeys } from '../../contract/connection'
import { twilioParams } from '../../local/vendor-deliveries'
import { sha256Hex } from '../../shared/crypto'
import { twilioSignature } from '../../worker/channels/twilio'
import { GATEWAY, type Harness } from '../support/workerd/harness'
import { CASES, CASES_ENV, type ChannelCase, type Tenant } from './support/cases'
import { edgeHarness, kv, putConnection } from './support/edge'

const gateway = (overrides = {}) => edgeHarness({ ...CASES_ENV, ...overrides })
const byChannel = (name: string) => CASES.find((c) => c.channel === name) as ChannelCase

/** Each channel's shared path for a tenant, and the variables that list it with its secret. */
const SHARED: Record<
  string,
  { url: (t: Tenant) => string; vars: (t: Tenant, s: string) => Record<string, string> }
> = {
  telegram: {
    url: (t) => `${GATEWAY}/webhooks/telegram/${t.account}`,
    vars: (t, s) => ({ TELEGRAM_SECRET_TOKENS_BY_BOT: `${t.account}=${s}` }),
  },
  wechat: {
    url: (t) => `${GATEWAY}/webhooks/wechat/${t.account}`,
    vars: (t, s) => ({ WECHAT_TOKENS_BY_ACCOUNT: `${t.account}=${s}` }),
  },
  twilio: {
    url: () => `${GATEWAY}/webhooks/twilio`,
    vars: (t, s) => ({ TWILIO_AUTH_TOKENS_BY_ACCOUNT: `${t.account}=${s}` }),
  },
}

async function nothingWritten(h: Harness): Promise<void> {
  expect(await h.redis.exec<string[]>(['KEYS', `${h.redisKey('')}*`])).toEqual([])
  expect((await h.originCalls()).calls).toHaveLength(0)
}

async function putByAccount(c: ChannelCase, extra = {}) {
  const tenant = c.tenant()
  const secret = c.secret()
  const record = await putConnection(
    {
      channel: c.channel,
      account: tenant.account,
      ids: tenant.ids,
      secrets: [{ field: c.field, value: secret }],
      ...extra,
    },
    [tenant.account],
  )
  return { record, tenant, secret }
}

describe.each(Object.keys(SHARED))('%s: its shared path asks the registry first', (name) => {
  const c = byChannel(name)
  const shared = SHARED[name] as (typeof SHARED)[string]

  it('disabled in the registry, still in the variables with the same secret: 403, nothing written', async () => {
    const a = await putByAccount(c, { status: 'disabled' })
    const h = gateway(shared.vars(a.tenant, a.secret))
    const response = await h.deliver(await c.request(shared.url(a.tenant), a.tenant, a.secret))
    expect(response.status).toBe(403)
    await nothingWritten(h)
  })

  it('active in the registry: its secret verifies and the event names the connection', async () => {
    const a = await putByAccount(c)
    const h = gateway()
    const response = await h.deliver(await c.request(shared.url(a.tenant), a.tenant, a.secret))
    expect(response.status).toBe(200)
    const { calls } = await h.originCalls()
    expect(calls.map((call) => call.connection)).toEqual([{ id: a.record.id, version: 1 }])
  })

  it('the old variable secret no longer verifies once the registry holds the tenant: 401', async () => {
    const a = await putByAccount(c)
    const old = c.secret()
    const h = gateway(shared.vars(a.tenant, old))
    const response = await h.deliver(await c.request(shared.url(a.tenant), a.tenant, old))
    expect(response.status).toBe(401)
    await nothingWritten(h)
  })

  it('not in the registry: the variables serve it, as before', async () => {
    const tenant = c.tenant()
    const secret = c.secret()
    const h = gateway(shared.vars(tenant, secret))
    const response = await h.deliver(await c.request(shared.url(tenant), tenant, secret))
    expect(response.status).toBe(200)
    expect((await h.originCalls()).calls.map((call) => call.connection)).toEqual([undefined])
  })
})

/** A Twilio JSON webhook: the URL carries the body's hash and is signed alone. */
async function twilioJsonRequest(url: string, account: string, token: string): Promise<Request> {
  const body = JSON.stringify(Object.fromEntries(twilioParams({ accountSid: account })))
  const signed = `${url}?bodySHA256=${await sha256Hex(body)}`
  const signature = await twilioSignature(token, signed, [])
  return new Request(signed, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-twilio-signature': signature },
    body,
  })
}

describe('twilio: a JSON body names its AccountSid at the top level, so the registry is asked first', () => {
  const c = byChannel('twilio')
  const url = `${GATEWAY}/webhooks/twilio`

  it('disabled in the registry, still in the variables with the same secret: 403, nothing written', async () => {
    const a = await putByAccount(c, { status: 'disabled' })
    const h = gateway(SHARED.twilio?.vars(a.tenant, a.secret))
    const response = await h.deliver(await twilioJsonRequest(url, a.tenant.account, a.secret))
    expect(response.status).toBe(403)
    await nothingWritten(h)
  })

  it('active in the registry: its secret verifies and the event names the connection', async () => {
    const a = await putByAccount(c)
    const h = gateway()
    const response = await h.deliver(await twilioJsonRequest(url, a.tenant.account, a.secret))
    expect(response.status).toBe(200)
    const { calls } = await h.originCalls()
    expect(calls.map((call) => call.connection)).toEqual([{ id: a.record.id, version: 1 }])
  })
})

describe('an index entry whose record KV does not hold: the retry answer, never the variables', () => {
  it.each(['slack', 'line', 'twilio'])('%s', async (name) => {
    const c = byChannel(name)
    const tenant = c.tenant()
    const secret = c.secret()
    await kv().put(kvKeys.index(c.channel, tenant.account), 'c_aaaaaaaaaaaaaaaaaaaaaaaaaa')
    const vars: Record<string, Record<string, string>> = {
      slack: {
        SLACK_SIGNING_SECRET: '',
        SLACK_SIGNING_SECRETS_BY_APP: `${tenant.account}=${secret}`,
        SLACK_TEAMS_BY_APP: `${tenant.account}=${tenant.ids.join('|')}`,
      },
      line: { LINE_CHANNEL_SECRETS_BY_DESTINATION: `${tenant.account}=${secret}` },
      twilio: { TWILIO_AUTH_TOKENS_BY_ACCOUNT: `${tenant.account}=${secret}` },
    }
    const h = gateway(vars[name])
    const url = `${GATEWAY}/webhooks/${name}`
    const response = await h.deliver(await c.request(url, tenant, secret))
    expect(response.status).toBe(503)
    await nothingWritten(h)
  })
})
