/**
 * The registry's service against real Postgres: what a create, rotate, disable, enable, update
 * and delete write (the connection, its sealed secrets, its audit row, its publication row, in
 * one transaction), what it refuses (naming the field, writing nothing), and that no secret is
 * ever in a view, an audit row or a stored column in the clear.
 */
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { secretAad } from '../../contract/connection'
import { createTestDatabase, type TestDatabase } from '../../local/services'
import * as registry from '../../origin/connections/service'
import type { Database } from '../../origin/db'
import { importKeyRing, type KeyRing, newKekEntry, open } from '../../shared/envelope'
import { openTestDb } from '../support/origin'

let database: TestDatabase
let db: Database
let sql: pg.Client
let deps: registry.ConnectionServiceDeps

beforeAll(async () => {
  database = await createTestDatabase()
  db = openTestDb(database.url)
  sql = new pg.Client({ connectionString: database.url })
  await sql.connect()
  deps = { db, originKeys: await importKeyRing(newKekEntry('o1')) }
})
afterAll(async () => {
  await sql?.end()
  await db?.close()
  await database?.drop()
})

const SECRET = 'slack-signing-secret-0123456789abcdef'
let app = 0
const slackApp = () => `A0TEST${String(app++).padStart(4, '0')}`
const count = async (table: string, where = 'true', values: unknown[] = []) =>
  Number((await sql.query(`SELECT count(*) FROM ${table} WHERE ${where}`, values)).rows[0].count)

const TABLES = ['connections', 'connection_secrets', 'connection_audit', 'connection_publications']
async function allCounts() {
  const counts: number[] = []
  for (const table of TABLES) counts.push(await count(table))
  return counts
}

async function refusal(work: Promise<unknown>) {
  const err = await work.then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(registry.ConnectionError)
  const { code, field, status, message } = err as registry.ConnectionError
  return { code, field, status, message }
}

describe('createConnection', () => {
  it('stores the connection, its secret sealed, one audit row and one publication; shows a fingerprint only', async () => {
    const account = slackApp()
    const view = await registry.createConnection(
      deps,
      { channel: 'slack', account, ids: ['T0AAA', 'T0BBB'], secrets: { signing_secret: SECRET } },
      'test',
    )
    expect(view).toMatchObject({
      channel: 'slack',
      account,
      ids: ['T0AAA', 'T0BBB'],
      status: 'active',
      version: 1,
    })
    expect(view.id).toMatch(/^c_[a-z2-7]{26}$/)
    expect(view.secrets).toEqual([
      expect.objectContaining({
        field: 'signing_secret',
        notAfter: null,
        live: true,
        fingerprint: expect.stringMatching(/^sha256:[0-9a-f]{8}$/),
      }),
    ])
    expect(view.edge).toMatchObject({ pending: true, publishedVersion: null, seenVersion: null })
    expect(JSON.stringify(view)).not.toContain(SECRET)

    const stored = (
      await sql.query('SELECT * FROM connection_secrets WHERE connection_id = $1', [view.id])
    ).rows
    expect(stored).toHaveLength(1)
    expect(stored[0].sealed).not.toContain(SECRET)
    const aad = secretAad(view.id, 'signing_secret', stored[0].kid)
    expect(await open(deps.originKeys as KeyRing, stored[0].sealed, aad)).toBe(SECRET)
    const audit = (
      await sql.query('SELECT * FROM connection_audit WHERE connection_id = $1', [view.id])
    ).rows
    expect(audit.map((a) => a.action)).toEqual(['create'])
    expect(JSON.stringify(audit)).not.toContain(SECRET)
    expect(
      await count(
        'connection_publications',
        "connection_id = $1 AND kind = 'put' AND version = 1",
        [view.id],
      ),
    ).toBe(1)
  })

  it.each([
    [{ channel: 'slack', account: 'not-an-app', secrets: { signing_secret: SECRET } }, 'account'],
    [{ channel: 'nope', account: 'A0X', secrets: {} }, 'channel'],
    [
      {
        channel: 'slack',
        account: 'A0BAD1',
        ids: ['T0A', 'bad id'],
        secrets: { signing_secret: SECRET },
      },
      'ids.1',
    ],
    [{ channel: 'slack', account: 'A0BAD2' }, 'secrets.signing_secret'],
    [
      { channel: 'slack', account: 'A0BAD3', secrets: { signing_secret: 'a,b' } },
      'secrets.signing_secret',
    ],
    [
      { channel: 'slack', account: 'A0BAD4', secrets: { signing_secret: 'x'.repeat(513) } },
      'secrets.signing_secret',
    ],
    [
      { channel: 'slack', account: 'A0BAD5', secrets: { signing_secret: SECRET }, extra: 1 },
      'extra',
    ],
    [
      {
        channel: 'slack',
        account: 'A0BAD6',
        ids: Array.from({ length: 1001 }, (_, i) => `T${i}AA`),
        secrets: { signing_secret: SECRET },
      },
      'ids',
    ],
    [
      {
        channel: 'wechat',
        account: 'gh_0123456789ab',
        secrets: { token: 't', aes_key: 'k' },
        settings: { colour: 'x' },
      },
      'settings.colour',
    ],
    [{ channel: 'slack', account: 'A0BAD7', secrets: { [SECRET]: SECRET } }, 'secrets.?'],
    // What the edge could not use (origin/connections/edge-rules.ts): it would answer 503.
    [{ channel: 'slack', account: 'A0BAD8', secrets: { signing_secret: SECRET } }, 'ids'],
    [{ channel: 'slack', account: 'A0BAD9', ids: [], secrets: { signing_secret: SECRET } }, 'ids'],
    ...(['whatsapp-cloud', 'messenger', 'instagram'] as const).map((channel): [object, string] => [
      { channel, account: '910001', secrets: { app_secret: 'meta-secret-1' } },
      'ids',
    ]),
    [
      { channel: 'slack', account: 'A0BADA', ids: ['T1, T2'], secrets: { signing_secret: SECRET } },
      'ids.0',
    ],
    [
      { channel: 'slack', account: 'A0BADB', ids: ['T0A'], secrets: { signing_secret: 'a,b' } },
      'secrets.signing_secret',
    ],
    [
      { channel: 'slack', account: 'A0BADC', ids: ['T0A'], secrets: { signing_secret: 'a|b' } },
      'secrets.signing_secret',
    ],
    [
      { channel: 'slack', account: 'A0BADD', ids: ['T0A'], secrets: { signing_secret: ' ab ' } },
      'secrets.signing_secret',
    ],
    [
      { channel: 'messenger', account: '910002', ids: [' 5551'], secrets: { app_secret: 'm-1' } },
      'ids.0',
    ],
    [
      { channel: 'telegram', account: '7012', secrets: { secret_token: 'tok.en' } },
      'secrets.secret_token',
    ],
    [
      { channel: 'wechat', account: 'gh_0123456789ac', secrets: { token: 'to-ken' } },
      'secrets.token',
    ],
    [
      {
        channel: 'wechat',
        account: 'gh_0123456789ad',
        secrets: { token: 'tok', aes_key: 'short' },
      },
      'secrets.aes_key',
    ],
    [
      {
        channel: 'wechat',
        account: 'gh_0123456789ae',
        secrets: { token: 'tok' },
        settings: { app_id: 'app-1' },
      },
      'settings.app_id',
    ],
    [{ channel: 'teams', account: '------------------------------------' }, 'account'],
    [
      {
        channel: 'wechat',
        account: 'gh_0123456789af',
        secrets: { token: 'tok', aes_key: 'A'.repeat(43) },
      },
      'settings.app_id',
    ],
  ])('refuses %j naming %s, writing nothing', async (input, field) => {
    const before = await allCounts()
    const problem = await refusal(registry.createConnection(deps, input, 'test'))
    expect(problem).toMatchObject({ code: 'connection_invalid', field, status: 400 })
    expect(problem.message).not.toContain(SECRET)
    const after = await allCounts()
    expect(after).toEqual(before)
  })

  it('refuses a second connection of one account, and a Meta page another app holds, writing nothing', async () => {
    const account = slackApp()
    const input = { channel: 'slack', account, ids: ['T0AAA'], secrets: { signing_secret: SECRET } }
    await registry.createConnection(deps, input, 'test')
    expect(await refusal(registry.createConnection(deps, input, 'test'))).toMatchObject({
      code: 'connection_exists',
      field: 'account',
      status: 409,
    })

    const page = (app: string, ids: string[]) => ({
      channel: 'messenger',
      account: app,
      ids,
      secrets: { app_secret: 'meta-secret-1' },
    })
    await registry.createConnection(deps, page('900001', ['5550001', '5550002']), 'test')
    const before = await count('connections')
    expect(
      await refusal(
        registry.createConnection(deps, page('900002', ['5550009', '5550002']), 'test'),
      ),
    ).toMatchObject({ code: 'connection_id_taken', field: 'ids' })
    expect(await count('connections')).toBe(before)
    expect(await count('connections', 'account = $1', ['900002'])).toBe(0)
  })

  it("a mailbox: canonical addresses only, and an address is one inbox's (as its account or an alias)", async () => {
    const mail = (account: string, ids: string[]) => ({ channel: 'email', account, ids })
    // The edge looks up the recipient lower-cased and without its +tag: nothing else can match.
    for (const [input, field] of [
      [mail('Support@m1.example', []), 'account'],
      [mail('support+x@m1.example', []), 'account'],
      [mail('support@m1.example', ['Help@m1.example']), 'ids.0'],
      [mail('support@m1.example', ['help+x@m1.example']), 'ids.0'],
      [mail('support@m1.example', ['support@m1.example']), 'ids.0'],
    ] as const) {
      expect(await refusal(registry.createConnection(deps, input, 'test'))).toMatchObject({
        code: 'connection_invalid',
        field,
      })
    }
    const a = await registry.createConnection(
      deps,
      mail('support@m1.example', ['help@m1.example']),
      'test',
    )
    const before = await allCounts()
    for (const [input, field] of [
      [mail('sales@m1.example', ['help@m1.example']), 'ids'], // another's alias
      [mail('sales@m1.example', ['support@m1.example']), 'ids'], // another's mailbox
      [mail('help@m1.example', []), 'account'], // a mailbox that is another's alias
    ] as const) {
      expect(await refusal(registry.createConnection(deps, input, 'test'))).toMatchObject({
        code: 'connection_id_taken',
        field,
      })
    }
    const b = await registry.createConnection(deps, mail('sales@m1.example', []), 'test')
    expect(
      await refusal(registry.updateConnection(deps, b.id, { ids: ['help@m1.example'] }, 'test')),
    ).toMatchObject({ code: 'connection_id_taken' })
    expect(
      await refusal(registry.updateConnection(deps, b.id, { ids: ['sales@m1.example'] }, 'test')),
    ).toMatchObject({ code: 'connection_invalid' })
    expect((await allCounts()).map((n, i) => n - (before[i] ?? 0))).toEqual([1, 0, 1, 1])
    expect((await registry.showConnection(deps, a.id)).ids).toEqual(['help@m1.example'])
  })

  it('an API connection is found by its key hashes (set from its keys, never given): the key itself never reaches its ids', async () => {
    const view = await registry.createConnection(
      deps,
      { channel: 'api', account: 'tenant-a', secrets: { api_key: 'api-key-of-tenant-a-0001' } },
      'test',
    )
    const { createHash } = await import('node:crypto')
    expect(view.ids).toEqual([
      createHash('sha256').update('api-key-of-tenant-a-0001').digest('hex'),
    ])
  })

  it('an API connection by key hash (api_key_hash, as API_KEYS holds): 64 lowercase hex, its id as given, rotated as given; neither field refused', async () => {
    const before = await allCounts()
    for (const bad of ['AB'.repeat(32), 'ab'.repeat(31), `${'ab'.repeat(31)}zz`]) {
      const input = { channel: 'api', account: 'tenant-h', secrets: { api_key_hash: bad } }
      expect(await refusal(registry.createConnection(deps, input, 'test'))).toMatchObject({
        code: 'connection_invalid',
        field: 'secrets.api_key_hash',
      })
    }
    const neither = { channel: 'api', account: 'tenant-h', secrets: {} }
    const none = await refusal(registry.createConnection(deps, neither, 'test'))
    expect(none).toMatchObject({ code: 'connection_invalid', field: 'secrets.api_key' })
    expect(none.message).toMatch(/api_key or api_key_hash/)
    expect(await allCounts()).toEqual(before)
    const [h1, h2] = ['ab'.repeat(32), 'cd'.repeat(32)]
    const view = await registry.createConnection(
      deps,
      { channel: 'api', account: 'tenant-h', secrets: { api_key_hash: [h1] } },
      'test',
    )
    expect(view.ids).toEqual([h1])
    const rotated = await registry.rotateConnection(
      deps,
      view.id,
      { secrets: { api_key_hash: h2 }, overlapSeconds: 0 },
      'test',
    )
    expect(rotated.ids).toEqual([h2])
    const both = await registry.rotateConnection(
      deps,
      view.id,
      { secrets: { api_key: 'api-key-of-tenant-h-0001' } },
      'test',
    )
    const { createHash } = await import('node:crypto')
    const keyHash = createHash('sha256').update('api-key-of-tenant-h-0001').digest('hex')
    expect([...both.ids].sort()).toEqual([h2, keyHash].sort())
  })

  it('is refused with registry_disabled while ORIGIN_KEKS is unset', async () => {
    const input = {
      channel: 'slack',
      account: slackApp(),
      ids: ['T0AAA'],
      secrets: { signing_secret: SECRET },
    }
    expect(
      await refusal(registry.createConnection({ db, originKeys: null }, input, 'test')),
    ).toMatchObject({ code: 'registry_disabled', status: 503 })
  })
})

describe('rotate, disable, enable, update, delete', () => {
  const create = (account = slackApp()) =>
    registry.createConnection(
      deps,
      { channel: 'slack', account, ids: ['T0AAA'], secrets: { signing_secret: SECRET } },
      'test',
    )

  it('rotate: the new secret current, the old one live until now + overlap; at most two; overlap 0 retires at once', async () => {
    let now = Date.parse('2026-12-04T12:00:00Z')
    const clocked = { ...deps, now: () => now }
    const c = await create()
    const first = c.secrets[0]?.kid
    const rotated = await registry.rotateConnection(
      clocked,
      c.id,
      { secrets: { signing_secret: 'second-secret-000' }, overlapSeconds: 3600 },
      'test',
    )
    expect(rotated.version).toBe(2)
    expect(rotated.secrets.map((s) => [s.kid === first, s.notAfter, s.live])).toEqual([
      [false, null, true],
      [true, '2026-12-04T13:00:00.000Z', true],
    ])
    now += 60_000
    const third = await registry.rotateConnection(
      clocked,
      c.id,
      { secrets: { signing_secret: 'third-secret-000' } },
      'test',
    )
    expect(third.secrets).toHaveLength(2)
    expect(third.secrets.some((s) => s.kid === first)).toBe(false)
    expect(third.secrets[1]?.notAfter).toBe('2026-12-05T12:01:00.000Z')
    const revoked = await registry.rotateConnection(
      clocked,
      c.id,
      { secrets: { signing_secret: 'fourth-secret-000' }, overlapSeconds: 0 },
      'test',
    )
    expect(revoked.secrets.map((s) => s.notAfter)).toEqual([null])
    expect(revoked.version).toBe(4)
    const detail = await registry.showConnection(deps, c.id)
    expect(detail.audit.map((a) => a.action)).toEqual(['rotate', 'rotate', 'rotate', 'create'])
    expect(JSON.stringify(detail)).not.toMatch(/second-secret|third-secret|fourth-secret/)
    expect(await count('connection_publications', 'connection_id = $1', [c.id])).toBe(4)
  })

  it('rotate refuses a field the channel has not, naming it, and changes nothing', async () => {
    const c = await create()
    expect(
      await refusal(
        registry.rotateConnection(deps, c.id, { secrets: { token: 'x-secret' } }, 'test'),
      ),
    ).toMatchObject({ field: 'secrets.token' })
    expect((await registry.showConnection(deps, c.id)).version).toBe(1)
  })

  it('expireSecrets drops what ended and publishes the change', async () => {
    let now = Date.parse('2026-12-04T12:00:00Z')
    const clocked = { ...deps, now: () => now }
    const c = await create()
    await registry.rotateConnection(
      clocked,
      c.id,
      { secrets: { signing_secret: 'next-secret-000' }, overlapSeconds: 60 },
      'test',
    )
    now += 120_000
    expect(await registry.expireSecrets(clocked)).toBeGreaterThanOrEqual(1)
    const after = await registry.showConnection(deps, c.id)
    expect(after.secrets).toHaveLength(1)
    expect(after.audit[0]).toMatchObject({ action: 'expire', actor: 'registry' })
  })

  it('expireSecrets in two pods at once changes a connection once: no empty version, audit or publication', async () => {
    let now = Date.parse('2026-12-04T12:00:00Z')
    const clocked = { ...deps, now: () => now }
    const c = await create()
    await registry.rotateConnection(
      clocked,
      c.id,
      { secrets: { signing_secret: 'next-secret-001' }, overlapSeconds: 60 },
      'test',
    )
    now += 120_000
    // Pod 2 has read what is due when pod 1's pass drops it; pod 2 then goes on.
    let release = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const late = {
      ...clocked,
      db: {
        ...deps.db,
        transaction: deps.db.transaction.bind(deps.db),
        query: async <R>(text: string, values?: unknown[]) => {
          const rows = await deps.db.query<R>(text, values)
          await gate
          return rows
        },
      },
    }
    const pod2 = registry.expireSecrets(late)
    expect(await registry.expireSecrets(clocked)).toBe(1)
    release()
    expect(await pod2).toBe(0)
    const after = await registry.showConnection(deps, c.id)
    expect(after.version).toBe(3)
    expect(after.audit.filter((a) => a.action === 'expire')).toHaveLength(1)
    expect(await registry.expireSecrets(clocked)).toBe(0)
  })

  it('disable and enable move the version; delete keeps the audit and publishes the keys to delete', async () => {
    const c = await registry.createConnection(
      deps,
      {
        channel: 'line',
        account: `U${'0'.repeat(31)}7`,
        secrets: { channel_secret: 'line-secret-0001' },
      },
      'test',
    )
    expect((await registry.disableConnection(deps, c.id, 'test')).status).toBe('disabled')
    expect(await registry.enableConnection(deps, c.id, 'test')).toMatchObject({
      status: 'active',
      version: 3,
    })
    expect(await registry.deleteConnection(deps, c.id, 'test')).toEqual({ id: c.id, deleted: true })
    expect(await count('connections', 'id = $1', [c.id])).toBe(0)
    expect(await count('connection_secrets', 'connection_id = $1', [c.id])).toBe(0)
    expect(await count('connection_audit', 'connection_id = $1', [c.id])).toBe(4)
    const published = (
      await sql.query(
        "SELECT version, remove_keys FROM connection_publications WHERE connection_id = $1 AND kind = 'delete'",
        [c.id],
      )
    ).rows
    expect(published).toEqual([
      { version: '4', remove_keys: [`conn:${c.id}`, `idx:line:${c.account}`] },
    ])
    expect(await refusal(registry.showConnection(deps, c.id))).toMatchObject({
      code: 'connection_not_found',
      status: 404,
    })
    expect(await refusal(registry.disableConnection(deps, c.id, 'test'))).toMatchObject({
      code: 'connection_not_found',
    })
  })

  it('update: a removed page leaves its index key to delete; a page of another app is refused', async () => {
    const c = await registry.createConnection(
      deps,
      {
        channel: 'instagram',
        account: '910001',
        ids: ['1701', '1702'],
        secrets: { app_secret: 'ig-secret-0001' },
      },
      'test',
    )
    await registry.createConnection(
      deps,
      {
        channel: 'instagram',
        account: '910002',
        ids: ['1799'],
        secrets: { app_secret: 'ig-secret-0002' },
      },
      'test',
    )
    const updated = await registry.updateConnection(deps, c.id, { ids: ['1702', '1703'] }, 'test')
    expect(updated).toMatchObject({ ids: ['1702', '1703'], version: 2 })
    const pub = (
      await sql.query(
        'SELECT remove_keys FROM connection_publications WHERE connection_id = $1 AND version = 2',
        [c.id],
      )
    ).rows
    expect(pub).toEqual([{ remove_keys: ['idx:instagram:1701'] }])
    expect(
      await refusal(registry.updateConnection(deps, c.id, { ids: ['1799'] }, 'test')),
    ).toMatchObject({ code: 'connection_id_taken' })
    // No ids left: the edge would answer its every webhook 503.
    expect(await refusal(registry.updateConnection(deps, c.id, { ids: [] }, 'test'))).toMatchObject(
      { code: 'connection_invalid', field: 'ids' },
    )
    expect((await registry.showConnection(deps, c.id)).version).toBe(2)
  })

  it('list pages by id and filters', async () => {
    const page1 = await registry.listConnections(deps, { channel: 'slack', limit: 2 })
    expect(page1.connections).toHaveLength(2)
    expect(page1.next).toBe(page1.connections[1]?.id)
    const page2 = await registry.listConnections(deps, {
      channel: 'slack',
      limit: 2,
      after: page1.next ?? undefined,
    })
    expect((page2.connections[0]?.id ?? '') > (page1.next ?? '')).toBe(true)
    expect(page1.connections.every((c) => c.channel === 'slack')).toBe(true)
    expect(await refusal(registry.listConnections(deps, { limit: 500 }))).toMatchObject({
      field: 'limit',
    })
  })

  it('generate: the registry makes a secret, answers it once, then shows only its fingerprint', async () => {
    const { createHash } = await import('node:crypto')
    const sha = (text: string) => createHash('sha256').update(text).digest('hex')
    const c = await registry.createConnection(
      deps,
      { channel: 'telegram', account: '8800001', generate: ['secret_token'] },
      'test',
    )
    const token = c.generated?.secret_token ?? ''
    expect(token).toMatch(/^[A-Za-z0-9_-]{48}$/)
    expect(c.secrets[0]?.fingerprint).toBe(`sha256:${sha(token).slice(0, 8)}`)
    const shown = await registry.showConnection(deps, c.id)
    expect(JSON.stringify(shown)).not.toContain(token)
    expect(shown).not.toHaveProperty('generated')
    const rotated = await registry.rotateConnection(
      deps,
      c.id,
      { generate: ['secret_token'], overlapSeconds: 60 },
      'test',
    )
    expect(rotated.generated?.secret_token).toMatch(/^[A-Za-z0-9_-]{48}$/)
    expect(rotated.generated?.secret_token).not.toBe(token)
    expect(rotated.secrets).toHaveLength(2)
    const api = await registry.createConnection(
      deps,
      { channel: 'api', account: 'tenant-gen', generate: ['api_key'] },
      'test',
    )
    expect(api.ids).toEqual([sha(api.generated?.api_key ?? '')])
    expect(
      await refusal(
        registry.createConnection(
          deps,
          { channel: 'slack', account: slackApp(), ids: ['T0AAA'], generate: ['signing_secret'] },
          'test',
        ),
      ),
    ).toMatchObject({ field: 'generate.0' })
    expect(
      await refusal(
        registry.createConnection(
          deps,
          {
            channel: 'telegram',
            account: '8800002',
            secrets: { secret_token: 'abc' },
            generate: ['secret_token'],
          },
          'test',
        ),
      ),
    ).toMatchObject({ field: 'generate.0' })
  })
})
