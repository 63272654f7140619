/**
 * The deployable bundle in Miniflare (local/worker-runtime.ts), its KV namespace bound from
 * wrangler.toml: a connection put from Node (`miniflare.getKVNamespace`, as the origin's local
 * publisher writes it) is read by the Worker on its next request, with no restart. The origin is
 * down here on purpose: a verified request is spooled (200), a wrong secret is 401, an id KV does
 * not hold is the retry answer.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { kvKeys, newConnectionId } from '../../contract/connection'
import { telegramRequest, telegramUpdate } from '../../local/vendor-deliveries'
import { startWorkerMiniflare, type WorkerMiniflareHandle } from '../../local/worker-runtime'
import { edgeRecord, TEST_EDGE_KEKS } from './support/record'

let worker: WorkerMiniflareHandle

beforeAll(async () => {
  worker = await startWorkerMiniflare({
    vars: {
      ORIGIN_URL: 'http://127.0.0.1:9',
      ORIGIN_SHARED_SECRET: 'edge-miniflare-origin-secret',
      EDGE_KEKS: TEST_EDGE_KEKS,
      DECISION_FLUSH_SECONDS: '0',
    },
  })
}, 120_000)

afterAll(async () => {
  await worker?.stop()
})

describe('a connection published into the local KV', () => {
  it('verifies its first webhook without a restart; a wrong secret 401; an unknown id 503', async () => {
    const route = (id: string) => `${worker.url}/webhooks/telegram/c/${id}`
    const update = () => telegramUpdate({ updateId: Math.floor(Math.random() * 2 ** 31) })
    const record = await edgeRecord({
      channel: 'telegram',
      account: '7100000001',
      secrets: [{ field: 'secret_token', value: 'edge-miniflare-token' }],
    })
    // The Worker is serving already (an id it does not know gets the retry answer) ...
    const unknown = await fetch(telegramRequest(route(newConnectionId()), update(), 'x'))
    expect(unknown.status).toBe(503)
    // ... when the connection is published.
    const kv = await worker.miniflare.getKVNamespace('CONNECTIONS')
    await kv.put(kvKeys.connection(record.id), JSON.stringify(record))
    const ok = await fetch(telegramRequest(route(record.id), update(), 'edge-miniflare-token'))
    expect(ok.status).toBe(200)
    expect(ok.headers.get('x-dedup-decision')).toBe('spooled')
    const wrong = await fetch(telegramRequest(route(record.id), update(), 'another-token'))
    expect(wrong.status).toBe(401)
  })
})
