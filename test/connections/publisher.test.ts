/**
 * The publisher against real Postgres and a real KV namespace (Miniflare's, as the Worker reads
 * it locally): a change becomes the edge record the contract describes, its secrets sealed with
 * EDGE_KEKS only, its index entries leading to it; changes coalesce to one write per key per
 * pass; stale keys (a removed page, a deleted connection) are deleted; a KV failure leaves the
 * rows pending for the next pass.
 */
import { Miniflare } from 'miniflare'
import pg from 'pg'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { EdgeConnectionSchema, kvKeys, secretAad } from '../../contract/connection'
import { createTestDatabase, type TestDatabase } from '../../local/services'
import { type KvPublisher, namespacePublisher } from '../../origin/connections/kv'
import {
  type PublisherDeps,
  publishPending,
  startPublisher,
} from '../../origin/connections/publisher'
import * as registry from '../../origin/connections/service'
import type { Database } from '../../origin/db'
import { silentLogger } from '../../origin/log'
import { importKeyRing, type KeyRing, newKekEntry, open } from '../../shared/envelope'
import { openTestDb } from '../support/origin'

let database: TestDatabase
let db: Database
let sql: pg.Client
let mf: Miniflare
let kv: Awaited<ReturnType<Miniflare['getKVNamespace']>>
let originKeys: KeyRing
let edgeKeys: KeyRing
let writes: string[]
let failing = false
let deps: PublisherDeps
let service: registry.ConnectionServiceDeps

beforeAll(async () => {
  database = await createTestDatabase()
  db = openTestDb(database.url)
  sql = new pg.Client({ connectionString: database.url })
  await sql.connect()
  mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response("") } }',
    kvNamespaces: ['CONNECTIONS'],
  })
  kv = await mf.getKVNamespace('CONNECTIONS')
  originKeys = (await importKeyRing(newKekEntry('o1'))) as KeyRing
  edgeKeys = (await importKeyRing(newKekEntry('e1'))) as KeyRing
  const inner = namespacePublisher(kv)
  // Counts what reaches KV, and fails on demand.
  const counted: KvPublisher = {
    async put(pairs) {
      if (failing) throw new Error('KV unreachable')
      writes.push(...pairs.map((p) => p.key))
      await inner.put(pairs)
    },
    delete: (keys) => inner.delete(keys),
  }
  deps = { db, originKeys, edgeKeys, kv: counted, logger: silentLogger }
  service = { db, originKeys }
})
afterAll(async () => {
  await mf?.dispose()
  await sql?.end()
  await db?.close()
  await database?.drop()
})

async function edgeRecordOf(id: string) {
  const raw = await kv.get(kvKeys.connection(id))
  return raw === null ? null : v.parse(EdgeConnectionSchema, JSON.parse(raw))
}

const pending = async () =>
  Number(
    (await sql.query('SELECT count(*) FROM connection_publications WHERE published_at IS NULL'))
      .rows[0].count,
  )

describe('publishPending', () => {
  it('writes the edge record (secrets under EDGE_KEKS only) and its index entries; the view says published', async () => {
    writes = []
    const c = await registry.createConnection(
      service,
      {
        channel: 'whatsapp-cloud',
        account: '700001',
        ids: ['3001', '3002'],
        secrets: { app_secret: 'wa-app-secret-1' },
      },
      'test',
    )
    expect(await publishPending(deps)).toMatchObject({ ran: true, connections: 1 })
    const record = await edgeRecordOf(c.id)
    expect(record).toMatchObject({
      v: 1,
      id: c.id,
      channel: 'whatsapp-cloud',
      account: '700001',
      ids: ['3001', '3002'],
      status: 'active',
      version: 1,
    })
    const secret = record?.secrets[0]
    expect(secret).toMatchObject({ field: 'app_secret', notAfter: null })
    const aad = secretAad(c.id, 'app_secret', secret?.kid ?? '')
    expect(await open(edgeKeys, secret?.sealed ?? '', aad)).toBe('wa-app-secret-1')
    await expect(open(originKeys, secret?.sealed ?? '', aad)).rejects.toThrow()
    expect(JSON.stringify(record)).not.toContain('wa-app-secret-1')
    expect(await kv.get(kvKeys.index('whatsapp-cloud', '3001'))).toBe(c.id)
    expect(await kv.get(kvKeys.index('whatsapp-cloud', '3002'))).toBe(c.id)
    expect(await pending()).toBe(0)
    const view = await registry.showConnection(service, c.id)
    expect(view.edge).toMatchObject({ pending: false, publishedVersion: 1 })
  })

  it('a mailbox: an index entry for its address and for each alias (the Worker looks up the recipient)', async () => {
    const c = await registry.createConnection(
      service,
      { channel: 'email', account: 'desk@p1.example', ids: ['help@p1.example', 'hi@p1.example'] },
      'test',
    )
    expect(await publishPending(deps)).toMatchObject({ ran: true, connections: 1 })
    expect(await edgeRecordOf(c.id)).toMatchObject({ channel: 'email', secrets: [] })
    for (const address of ['desk@p1.example', 'help@p1.example', 'hi@p1.example']) {
      expect(await kv.get(kvKeys.index('email', address))).toBe(c.id)
    }
    await registry.updateConnection(service, c.id, { ids: ['hi@p1.example'] }, 'test')
    await publishPending(deps)
    expect(await kv.get(kvKeys.index('email', 'help@p1.example'))).toBeNull()
    expect(await kv.get(kvKeys.index('email', 'desk@p1.example'))).toBe(c.id)
  })

  it('coalesces changes into one write per key; a removed id and a deletion delete their keys', async () => {
    const c = await registry.createConnection(
      service,
      {
        channel: 'messenger',
        account: '700002',
        ids: ['4001', '4002'],
        secrets: { app_secret: 'm-secret-1' },
      },
      'test',
    )
    await registry.rotateConnection(
      service,
      c.id,
      { secrets: { app_secret: 'm-secret-2' } },
      'test',
    )
    await registry.updateConnection(service, c.id, { ids: ['4002'] }, 'test')
    await registry.disableConnection(service, c.id, 'test')
    writes = []
    await publishPending(deps)
    expect(writes.sort()).toEqual(
      [kvKeys.connection(c.id), kvKeys.index('messenger', '4002')].sort(),
    )
    expect(await edgeRecordOf(c.id)).toMatchObject({
      status: 'disabled',
      version: 4,
      ids: ['4002'],
    })
    // Disabled: the edge refuses it before verifying, so it holds no secret of it.
    expect((await edgeRecordOf(c.id))?.secrets).toHaveLength(0)
    expect(await kv.get(kvKeys.index('messenger', '4001'))).toBeNull()

    await registry.deleteConnection(service, c.id, 'test')
    await publishPending(deps)
    expect(await edgeRecordOf(c.id)).toBeNull()
    expect(await kv.get(kvKeys.index('messenger', '4002'))).toBeNull()
    expect(await kv.get(kvKeys.index('messenger', '700002'))).toBeNull()
  })

  it('an id moved from one connection to another in one pass is written for its new owner, not deleted', async () => {
    const a = await registry.createConnection(
      service,
      { channel: 'instagram', account: '700003', ids: ['5001'], secrets: { app_secret: 'ig-1' } },
      'test',
    )
    await publishPending(deps)
    await registry.updateConnection(service, a.id, { ids: ['5009'] }, 'test')
    const b = await registry.createConnection(
      service,
      { channel: 'instagram', account: '700004', ids: ['5001'], secrets: { app_secret: 'ig-2' } },
      'test',
    )
    await publishPending(deps)
    expect(await kv.get(kvKeys.index('instagram', '5001'))).toBe(b.id)
  })

  it('leaves the rows pending when KV does not take the writes, and publishes them on the next pass', async () => {
    const c = await registry.createConnection(
      service,
      { channel: 'telegram', account: '7000005', secrets: { secret_token: 'tg-secret-1' } },
      'test',
    )
    failing = true
    await expect(publishPending(deps)).rejects.toThrow('KV unreachable')
    failing = false
    expect(await pending()).toBe(1)
    expect(await edgeRecordOf(c.id)).toBeNull()
    await publishPending(deps)
    expect(await edgeRecordOf(c.id)).toMatchObject({ channel: 'telegram', version: 1 })
    expect(await pending()).toBe(0)
  })

  it('an API connection reaches the edge by its key hash, with its key sealed for the edge to compare', async () => {
    const c = await registry.createConnection(
      service,
      { channel: 'api', account: 'tenant-x', secrets: { api_key: 'api-key-x-000001' } },
      'test',
    )
    await publishPending(deps)
    const record = await edgeRecordOf(c.id)
    const secret = record?.secrets[0]
    expect(secret?.field).toBe('api_key')
    expect(
      await open(edgeKeys, secret?.sealed ?? '', secretAad(c.id, 'api_key', secret?.kid ?? '')),
    ).toBe('api-key-x-000001')
    expect(await kv.get(kvKeys.index('api', c.ids[0] ?? ''))).toBe(c.id)
    // Never by its tenant id: a tenant id of 64 hex digits would spell another tenant's key hash.
    expect(await kv.get(kvKeys.index('api', 'tenant-x'))).toBeNull()
  })

  it('resync queues every connection again and the next pass rewrites them', async () => {
    const total = Number((await sql.query('SELECT count(*) FROM connections')).rows[0].count)
    await kv.delete(kvKeys.index('whatsapp-cloud', '3001'))
    const { resyncAll } = await import('../../origin/connections/resync')
    expect(await resyncAll(service, 'test')).toBe(total)
    expect(await publishPending(deps)).toMatchObject({ connections: total })
    expect(await kv.get(kvKeys.index('whatsapp-cloud', '3001'))).not.toBeNull()
  })

  it('the loop: a change is published on wake, without waiting for the interval; stop ends it', async () => {
    const running = startPublisher({ ...deps, intervalMs: 60_000 })
    const c = await registry.createConnection(
      service,
      { channel: 'twilio', account: `AC${'7'.repeat(32)}`, secrets: { auth_token: 'tw-token-1' } },
      'test',
    )
    running.wake()
    const deadline = Date.now() + 10_000
    while ((await edgeRecordOf(c.id)) === null && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50))
    expect(await edgeRecordOf(c.id)).toMatchObject({ id: c.id, version: 1 })
    await running.stop()
  })

  it('a kind whose shared path names its account is indexed by it (Telegram: the bot), a disabled one too, and the entry goes with the connection', async () => {
    const c = await registry.createConnection(
      service,
      { channel: 'telegram', account: '7000010', secrets: { secret_token: 'tg-secret-10' } },
      'test',
    )
    await publishPending(deps)
    expect(await kv.get(kvKeys.index('telegram', '7000010'))).toBe(c.id)
    await registry.disableConnection(service, c.id, 'test')
    await publishPending(deps)
    expect(await kv.get(kvKeys.index('telegram', '7000010'))).toBe(c.id)
    expect(await edgeRecordOf(c.id)).toMatchObject({ status: 'disabled', secrets: [] })
    await registry.deleteConnection(service, c.id, 'test')
    await publishPending(deps)
    expect(await kv.get(kvKeys.index('telegram', '7000010'))).toBeNull()
  })

  it('a stale row does not delete an index key another connection owns now; it is written for its owner', async () => {
    const a = await registry.createConnection(
      service,
      { channel: 'instagram', account: '700011', ids: ['5101'], secrets: { app_secret: 'ig-11' } },
      'test',
    )
    await publishPending(deps)
    // A leaves page 5101 (a Meta connection keeps at least one id), B takes it.
    await registry.updateConnection(service, a.id, { ids: ['5199'] }, 'test')
    await publishPending(deps)
    const b = await registry.createConnection(
      service,
      { channel: 'instagram', account: '700012', ids: ['5101'], secrets: { app_secret: 'ig-12' } },
      'test',
    )
    await publishPending(deps)
    // A row of A's naming the key, published after B's (one left pending by an older publisher).
    await sql.query(
      `INSERT INTO connection_publications (connection_id, version, kind, remove_keys)
       VALUES ($1, 3, 'put', $2)`,
      [a.id, [kvKeys.index('instagram', '5101')]],
    )
    await publishPending(deps)
    expect(await kv.get(kvKeys.index('instagram', '5101'))).toBe(b.id)
    expect(await pending()).toBe(0)
  })

  it('a disabled connection whose secret does not open still publishes its disable', async () => {
    const c = await registry.createConnection(
      service,
      { channel: 'telegram', account: '7000013', secrets: { secret_token: 'tg-secret-13' } },
      'test',
    )
    await publishPending(deps)
    const stranger = (await importKeyRing(newKekEntry('o1'))) as KeyRing
    const { seal } = await import('../../shared/envelope')
    await sql.query('UPDATE connection_secrets SET sealed = $2 WHERE connection_id = $1', [
      c.id,
      await seal(stranger, 'x', 'y'),
    ])
    await registry.disableConnection(service, c.id, 'test')
    expect(await publishPending(deps)).toMatchObject({ failed: 0, connections: 1 })
    expect(await edgeRecordOf(c.id)).toMatchObject({ status: 'disabled', version: 2, secrets: [] })
    expect(await pending()).toBe(0)
  })

  it('a connection whose secret does not open is published without secrets and holds no row back', async () => {
    const bad = await registry.createConnection(
      service,
      { channel: 'telegram', account: '7000006', secrets: { secret_token: 'tg-secret-6' } },
      'test',
    )
    const good = await registry.createConnection(
      service,
      { channel: 'telegram', account: '7000007', secrets: { secret_token: 'tg-secret-7' } },
      'test',
    )
    const stranger = (await importKeyRing(newKekEntry('o1'))) as KeyRing
    const { seal } = await import('../../shared/envelope')
    await sql.query('UPDATE connection_secrets SET sealed = $2 WHERE connection_id = $1', [
      bad.id,
      await seal(stranger, 'x', 'y'),
    ])
    // The failing row first, a batch of one: it does not hold the next back.
    expect(await publishPending({ ...deps, batchSize: 1 })).toMatchObject({
      ran: true,
      failed: 1,
      connections: 1,
    })
    expect(await edgeRecordOf(bad.id)).toMatchObject({ status: 'active', version: 1, secrets: [] })
    expect(await pending()).toBe(1)
    expect(await publishPending({ ...deps, batchSize: 1 })).toMatchObject({ failed: 0 })
    expect(await edgeRecordOf(good.id)).toMatchObject({ version: 1 })
    expect(await pending()).toBe(0)
    await registry.deleteConnection(service, bad.id, 'test')
    await publishPending(deps)
    expect(await edgeRecordOf(bad.id)).toBeNull()
  })

  it('the gauges count the changes waiting for KV and the oldest one’s age', async () => {
    const { Registry } = await import('prom-client')
    const { registerRegistryGauges } = await import('../../origin/connections/metrics')
    const metrics = new Registry()
    registerRegistryGauges(metrics, db, silentLogger)
    await registry.createConnection(
      service,
      { channel: 'telegram', account: '7000008', secrets: { secret_token: 'tg-8' } },
      'test',
    )
    const before = await metrics.metrics()
    expect(before).toMatch(/^inbound_connection_publications_pending 1$/m)
    expect(before).toMatch(/^inbound_connection_publications_oldest_pending_seconds [0-9.e-]+$/m)
    await publishPending(deps)
    expect(await metrics.metrics()).toMatch(/^inbound_connection_publications_pending 0$/m)
  })
})
