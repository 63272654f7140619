/**
 * The console's connection forms and routes without a browser: a form read as its channel's
 * kind only (a field of another kind is never passed on), the rotate form's bounds, a refusal's
 * text with a submitted secret blanked, and, over HTTP against real Postgres, the pages off
 * (503, nothing written) without ORIGIN_KEKS, an unknown id (404), a delete not confirmed (the
 * connection stays), a secret the service refuses (no value in the answer).
 */
import { randomBytes } from 'node:crypto'
import type { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, type TestDatabase } from '../../local/services'
import { ConnectionError } from '../../origin/connections/service'
import {
  type ConnectionView,
  draftOf,
  flashOf,
  parseConnectionFilter,
  problemOf,
  rotationOf,
} from '../../origin/console/connections'
import type { Database } from '../../origin/db'
import { silentLogger } from '../../origin/log'
import { importKeyRing, newKekEntry } from '../../shared/envelope'
import { mountedConsole } from '../support/console-app'
import { openTestDb } from '../support/origin'

const OPERATOR = `forms-operator-${randomBytes(8).toString('hex')}`
const BASE = 'http://console.test/console'

describe('the connection forms', () => {
  it("a draft holds only its kind's fields: another kind's secret is not passed on", () => {
    const form = {
      account: ' gh_0123456789ab ',
      ids: 'ignored',
      'setting.app_id': 'wx123',
      'setting.other': 'dropped',
      'secret.token': 't0ken',
      'secret.aes_key': 'k3y',
      'secret.signing_secret': 'not-wechat',
    }
    expect(draftOf('wechat', form)).toEqual({
      channel: 'wechat',
      account: 'gh_0123456789ab',
      ids: [],
      settings: { app_id: 'wx123' },
      secrets: { token: 't0ken', aes_key: 'k3y' },
    })
    const slack = draftOf('slack', { account: 'A1', ids: 'T1\nT2, T3  T4', 'secret.token': 'x' })
    expect(slack.ids).toEqual(['T1', 'T2', 'T3', 'T4'])
    expect(slack.secrets).toEqual({})
  })

  it('the rotate form: 24 h by default, whole hours from 0 to 720, a field of the kind only', () => {
    const c = { channel: 'wechat' } as ConnectionView
    expect(rotationOf(c, { field: 'aes_key', 'secret.aes_key': 'new' })).toEqual({
      secrets: { aes_key: 'new' },
      overlapSeconds: 86_400,
    })
    expect(rotationOf(c, { field: 'token', overlap_hours: '0' })).toMatchObject({
      overlapSeconds: 0,
    })
    for (const overlap of ['-1', '721', '1.5', 'x']) {
      expect(rotationOf(c, { field: 'token', overlap_hours: overlap })).toMatchObject({
        code: 'invalid_overlap',
      })
    }
    expect(rotationOf(c, { field: 'signing_secret' })).toMatchObject({ code: 'invalid_field' })
  })

  it("a refusal's text loses every submitted secret; an error of another kind is no refusal", () => {
    const err = new ConnectionError('connection_invalid', 'secrets.token: s3cr3t-value bad', 'x')
    expect(problemOf(err, ['s3cr3t-value', ''])).toEqual({
      code: 'connection_invalid',
      field: 'x',
      message: 'secrets.token: ••• bad',
    })
    expect(problemOf(new Error('s3cr3t-value'), ['s3cr3t-value'])).toBeNull()
  })

  it('a flash only for the fixed words: `?done=toString` shows nothing', () => {
    expect(flashOf('rotated')).toMatch(/^Secret rotated/)
    for (const word of ['toString', 'constructor', '__proto__', '', undefined]) {
      expect(flashOf(word)).toBeUndefined()
    }
  })

  it("the list's filter keeps a known channel, an account, a connection id cursor; drops the rest", () => {
    expect(parseConnectionFilter({ channel: 'nope', account: ' ', after: 'c_x' })).toEqual({})
    const after = `c_${'a'.repeat(26)}`
    expect(parseConnectionFilter({ channel: 'line', account: 'U1', after })).toEqual({
      channel: 'line',
      account: 'U1',
      after,
    })
  })
})

describe('the connection routes over HTTP', () => {
  let tdb: TestDatabase
  let db: Database
  let on: Hono
  let off: Hono
  const config = {
    tokens: [{ name: 'ops', role: 'operator' as const, token: OPERATOR }],
    sessionSeconds: 600,
  }

  beforeAll(async () => {
    tdb = await createTestDatabase()
    db = openTestDb(tdb.url, 4)
    const connectionKeys = await importKeyRing(newKekEntry('k1'))
    on = mountedConsole({ db, logger: silentLogger, config, connectionKeys })
    off = mountedConsole({ db, logger: silentLogger, config })
  }, 60_000)

  afterAll(async () => {
    await db?.close()
    await tdb?.drop()
  })

  async function session(app: Hono) {
    const res = await app.request(`${BASE}/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: OPERATOR }),
    })
    const cookie = (res.headers.get('set-cookie') ?? '').split(';')[0] as string
    const page = await (await app.request(BASE, { headers: { cookie } })).text()
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] as string
    const post = (path: string, fields: Record<string, string>) =>
      app.request(`${BASE}${path}`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: csrf, ...fields }),
      })
    const get = (path: string) => app.request(`${BASE}${path}`, { headers: { cookie } })
    return { post, get }
  }

  const count = async () =>
    Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM connections'))[0]?.n)

  it('without ORIGIN_KEKS: every page 503 saying so, and a create writes nothing', async () => {
    const { get, post } = await session(off)
    const page = await get('/connections')
    expect(page.status).toBe(503)
    expect(await page.text()).toContain('ORIGIN_KEKS')
    const form = { channel: 'telegram', account: '123', 'secret.secret_token': 'abc' }
    expect((await post('/connections', form)).status).toBe(503)
    expect(await count()).toBe(0)
  })

  it('an unknown id: 404 on its page and its changes; a delete not confirmed leaves it', async () => {
    const { get, post } = await session(on)
    const unknown = `c_${'b'.repeat(26)}`
    expect((await get(`/connections/${unknown}`)).status).toBe(404)
    expect((await post(`/connections/${unknown}/disable`, {})).status).toBe(404)
    const created = await post('/connections', {
      channel: 'telegram',
      account: '4242',
      'secret.secret_token': 'first-secret-value',
    })
    expect(created.status).toBe(303)
    const id = (created.headers.get('location') ?? '').split('/').pop()?.split('?')[0] as string
    const unconfirmed = await post(`/connections/${id}/delete`, {})
    expect(unconfirmed.status).toBe(400)
    expect(await unconfirmed.text()).toContain('not_confirmed')
    expect((await get(`/connections/${id}`)).status).toBe(200)
  })

  it("edit: a Slack app's workspaces replaced whole; the list filters by status", async () => {
    const { get, post } = await session(on)
    const created = await post('/connections', {
      channel: 'slack',
      account: 'AFORMS1',
      ids: 'T0001',
      'secret.signing_secret': 'slack-signing-secret-value',
    })
    expect(created.status).toBe(303)
    const id = (created.headers.get('location') ?? '').split('/').pop()?.split('?')[0] as string
    const edited = await post(`/connections/${id}/update`, { ids: 'T0002\nT0003' })
    expect(edited.headers.get('location')).toBe(`/console/connections/${id}?done=updated`)
    const page = await (await get(`/connections/${id}`)).text()
    expect(page).toContain('T0002, T0003')
    expect(page).not.toContain('T0001')
    expect((await post(`/connections/${id}/update`, { ids: 'not-a-team' })).status).toBe(400)
    await post(`/connections/${id}/disable`, {})
    const disabled = await (await get('/connections?status=disabled')).text()
    const active = await (await get('/connections?status=active')).text()
    expect(disabled).toContain(`data-connection-id="${id}"`)
    expect(active).not.toContain(`data-connection-id="${id}"`)
  })

  it("a Meta app's 1,000 page ids (about 19 KB of form) are one form; past 96 KiB, 413", async () => {
    const { get, post } = await session(on)
    const ids = Array.from({ length: 1_000 }, (_, i) => String(1_000_000_000_000_000n + BigInt(i)))
    const created = await post('/connections', {
      channel: 'messenger',
      account: '909090',
      ids: ids.join('\n'),
      'secret.app_secret': 'meta-app-secret-value',
    })
    expect(created.status).toBe(303)
    const id = (created.headers.get('location') ?? '').split('/').pop()?.split('?')[0] as string
    expect(await (await get(`/connections/${id}`)).text()).toContain(ids.at(-1))
    const huge = await post(`/connections/${id}/update`, { ids: 'x'.repeat(100 * 1024) })
    expect(huge.status).toBe(413)
  })

  it("an empty secret input is a field not given: WeChat's plain mode, an API tenant by one field; none at all is refused", async () => {
    const { post } = await session(on)
    const plain = await post('/connections', {
      channel: 'wechat',
      account: 'gh_0a1b2c3d4e5f',
      'secret.token': 'plainmodetoken',
      'secret.aes_key': '',
      'setting.app_id': '',
    })
    expect(plain.status).toBe(303)
    const byHash = await post('/connections', {
      channel: 'api',
      account: 'tenant-by-hash',
      'secret.api_key': '',
      'secret.api_key_hash': 'ab'.repeat(32),
    })
    expect(byHash.status).toBe(303)
    const byKey = await post('/connections', {
      channel: 'api',
      account: 'tenant-by-key',
      'secret.api_key': 'key_console-given-key-value',
      'secret.api_key_hash': '',
    })
    expect(byKey.status).toBe(303)
    const neither = await post('/connections', {
      channel: 'api',
      account: 'tenant-neither',
      'secret.api_key': '',
      'secret.api_key_hash': '',
    })
    expect(neither.status).toBe(400)
    expect(await neither.text()).toContain('secrets.api_key')
  })

  it('a kind without secrets (a mailbox and its aliases): its form has no secret input, and creates', async () => {
    const { get, post } = await session(on)
    const form = await (await get('/connections/new?channel=email')).text()
    expect(form).not.toContain('type="password"')
    expect(form).toContain('name="ids"')
    const created = await post('/connections', {
      channel: 'email',
      account: 'support@acme.example',
      ids: 'help@acme.example',
    })
    expect(created.status).toBe(303)
  })

  it('a secret the service refuses: 400 naming the field, the value nowhere in the answer', async () => {
    const { post } = await session(on)
    const bad = `bad,secret|${randomBytes(6).toString('hex')}`
    const res = await post('/connections', {
      channel: 'telegram',
      account: '5151',
      'secret.secret_token': bad,
    })
    expect(res.status).toBe(400)
    const text = await res.text()
    expect(text).toContain('secrets.secret_token')
    expect(text).not.toContain('secrets.secret_token: secrets.secret_token')
    const headers = JSON.stringify([...res.headers])
    for (const part of [bad, bad.split('|')[1] as string]) {
      expect(text).not.toContain(part)
      expect(headers).not.toContain(part)
    }
  })
})
