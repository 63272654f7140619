/**
 * What a request costs at the edge with the registry: KV gets counted through a binding that
 * wraps the real one. One get per key on a memo miss and none on a hit, whatever the number of
 * connections KV holds; one index get per tenant named on a shared path; and the decision line names the
 * connection and its version while no log line holds a secret. Prints the edge's own part of a
 * request (lookup, config, verify) with 1 and with 1,000 connections in KV (a figure, no bound).
 */
import { describe, expect, it, vi } from 'vitest'
import { kvKeys } from '../../contract/connection'
import { partsOf, TEST_SECRETS, twilioDelivery } from '../../local/vendor-deliveries'
import { WEBHOOK_CHANNELS } from '../../worker/channels'
import { connectionConfig, usableConnection } from '../../worker/connections/config'
import { HINT_SCAN_CHARS } from '../../worker/connections/json-prefix'
import { connectionById } from '../../worker/connections/reader'
import { CASES, CASES_ENV } from './support/cases'
import { edgeHarness, kv, putConnection, routeOf } from './support/edge'

function countingKv(): { binding: KVNamespace; gets: string[] } {
  const gets: string[] = []
  const real = kv()
  const binding = {
    get: (key: string, options: unknown) => {
      gets.push(key)
      return real.get(key, options as KVNamespaceGetOptions<'text'>)
    },
  } as unknown as KVNamespace
  return { binding, gets }
}

const found = CASES.find((c) => c.channel === 'telegram')
if (!found) throw new Error('no telegram case')
const tg = found

async function putTelegrams(count: number) {
  const records = []
  for (let i = 0; i < count; i++) {
    const tenant = tg.tenant()
    const secret = tg.secret()
    const record = await putConnection({
      channel: 'telegram',
      account: tenant.account,
      secrets: [{ field: 'secret_token', value: secret }],
    })
    records.push({ record, tenant, secret })
  }
  return records
}

describe('KV gets per request', () => {
  it('a route id: one get on a memo miss, none on a hit', async () => {
    const [a] = await putTelegrams(1)
    if (!a) throw new Error('none')
    const { binding, gets } = countingKv()
    const h = edgeHarness({ CONNECTIONS: binding })
    for (let i = 0; i < 3; i++) {
      const request = await tg.request(routeOf('telegram', a.record.id), a.tenant, a.secret)
      expect((await h.deliver(request)).status).toBe(200)
    }
    expect(gets).toEqual([kvKeys.connection(a.record.id)])
  })

  it("Twilio's shared path reads its account's index once; Slack reads its index once", async () => {
    const { binding, gets } = countingKv()
    const h = edgeHarness({ ...CASES_ENV, CONNECTIONS: binding })
    for (let i = 0; i < 2; i++) {
      expect((await h.send(twilioDelivery({ secret: TEST_SECRETS.twilio }))).status).toBe(200)
    }
    // The form's AccountSid, asked before the variables (the registry wins); the miss is held.
    expect(gets).toHaveLength(1)
    expect(gets[0]).toMatch(/^idx:twilio:AC[0-9a-f]{32}$/)
    gets.length = 0
    const slack = CASES.find((c) => c.channel === 'slack')
    if (!slack) throw new Error('no slack case')
    const tenant = { account: 'A123ABC456', ids: ['T123ABC456'] }
    const url = 'https://gateway.test/webhooks/slack'
    for (let i = 0; i < 2; i++) {
      const request = await slack.request(url, tenant, TEST_SECRETS.slack)
      expect((await h.deliver(request)).status).toBe(200)
    }
    // Not in the index: the variables verified it; the negative answer is held too.
    expect(gets).toEqual([kvKeys.index('slack', tenant.account)])
  })
})

describe('before the signature, a bounded prefix only', () => {
  it('a Meta batch whose first entry id lies past its first 8 KiB is read for no hint: no KV get', async () => {
    const { binding, gets } = countingKv()
    const h = edgeHarness({ ...CASES_ENV, CONNECTIONS: binding })
    const body = JSON.stringify({
      object: 'page',
      pad: 'x'.repeat(HINT_SCAN_CHARS),
      entry: [{ id: '106540352242922', time: 1, messaging: [] }],
    })
    const request = new Request('https://gateway.test/webhooks/messenger', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': 'sha256=00' },
      body,
    })
    // No hint: the variables' answer (here none configured for it, so not 2xx), and KV untouched.
    expect((await h.deliver(request)).status).not.toBe(200)
    expect(gets).toEqual([])
  })
})

describe('the logs', () => {
  it('the decision line names the connection and version; no line holds a secret', async () => {
    const lines: string[] = []
    const spy = vi.spyOn(console, 'log').mockImplementation((line: unknown) => {
      lines.push(String(line))
    })
    try {
      const [a] = await putTelegrams(1)
      if (!a) throw new Error('none')
      const h = edgeHarness()
      const url = routeOf('telegram', a.record.id)
      expect((await h.deliver(await tg.request(url, a.tenant, a.secret))).status).toBe(200)
      // A wrong secret, and a record whose secrets were sealed for another id.
      await h.deliver(await tg.request(url, a.tenant, 'tg-wrong-secret'))
      const copy = { ...a.record, id: 'c_aaaaaaaaaaaaaaaaaaaaaaaaaa' }
      await kv().put(kvKeys.connection(copy.id), JSON.stringify(copy))
      await h.deliver(await tg.request(routeOf('telegram', copy.id), a.tenant, a.secret))
      const decision = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'decision')
      expect(decision).toMatchObject({ connection: a.record.id, connectionVersion: 1 })
      const sealed = a.record.secrets[0]?.sealed ?? 'none'
      for (const line of lines) {
        expect(line).not.toContain(a.secret)
        expect(line).not.toContain(sealed)
      }
      expect(lines.some((l) => l.includes('connection_unopenable'))).toBe(true)
    } finally {
      spy.mockRestore()
    }
  })
})

describe('figures', () => {
  it('lookup + config + verify, with 1 and with 1,000 connections in KV (memo miss, then hits)', async () => {
    const channel = WEBHOOK_CHANNELS.find((c) => c.name === 'telegram')
    if (!channel) throw new Error('no telegram channel')
    const timings: Record<string, string> = {}
    let stored = 0
    for (const count of [1, 1_000]) {
      const records = await putTelegrams(count - stored)
      stored = count
      const pick = records[records.length - 1]
      if (!pick) throw new Error('none')
      const env = edgeHarness().env
      const request = await tg.request(
        routeOf('telegram', pick.record.id),
        pick.tenant,
        pick.secret,
      )
      const parts = await partsOf(request)
      const once = async () => {
        const started = performance.now()
        const lookup = await connectionById(env, 'telegram', pick.record.id)
        const read = usableConnection('telegram', lookup, 'figure')
        const { config } = await connectionConfig(env, channel, read)
        if (!config.ok) throw new Error('not configured')
        const verdict = await channel.verify(parts, config.value, {})
        expect(verdict.ok).toBe(true)
        return performance.now() - started
      }
      const miss = await once()
      const hits: number[] = []
      for (let i = 0; i < 200; i++) hits.push(await once())
      hits.sort((x, y) => x - y)
      timings[`${count}`] = `miss ${miss.toFixed(2)} ms, hit p50 ${hits[100]?.toFixed(3)} ms`
    }
    console.info(`connection lookup + config + verify: ${JSON.stringify(timings)}`)
  }, 120_000)
})
