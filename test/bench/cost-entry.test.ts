/**
 * The cost phase's counting entry (bench/cost-entry.ts) in workerd, through Miniflare, in front of
 * a small Worker that uses every kind of binding the accounting knows (a KV namespace, an R2
 * bucket, a queue it also consumes) and makes a subrequest: each operation is counted once, by
 * its billing class, queue operations per 64 KB, and a binding is recognized by its shape, not its
 * name. The gateway itself has no KV binding yet; this is what counts its reads when it does.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Miniflare } from 'miniflare'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { COUNTING_ENTRY, COUNTS_PATH } from '../../bench/cost-entry'

const WORKER = `export default {
  async fetch(request, env) {
    await env.SESSIONS.put('k', 'v')
    await env.SESSIONS.get('k')
    await env.SESSIONS.getWithMetadata('k')
    await env.SESSIONS.list()
    await env.SESSIONS.delete('k')
    await env.ARCHIVE.put('o', 'x')
    await env.ARCHIVE.get('o')
    await env.ARCHIVE.head('o')
    await env.ARCHIVE.delete('o')
    await env.JOBS.send({ n: 1 })
    await env.JOBS.sendBatch([{ body: 'small' }, { body: 'x'.repeat(70000) }])
    await fetch(env.ECHO_URL + '/ping')
    return new Response('ok')
  },
  async queue(batch) {
    // One acked here; the others by returning.
    batch.messages[0].ack()
  },
}
`

let echo: Server
let mf: Miniflare
let url: string

beforeAll(async () => {
  echo = createServer((_req, res) => res.end('pong'))
  await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
  const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`
  mf = new Miniflare({
    modules: [
      { type: 'ESModule', path: 'entry.js', contents: COUNTING_ENTRY },
      { type: 'ESModule', path: 'index.js', contents: WORKER },
    ],
    compatibilityDate: '2026-04-01',
    bindings: { ECHO_URL: echoUrl },
    kvNamespaces: ['SESSIONS'],
    r2Buckets: ['ARCHIVE'],
    queueProducers: { JOBS: { queueName: 'jobs' } },
    queueConsumers: { jobs: { maxBatchSize: 10, maxBatchTimeout: 0 } },
    port: 0,
    host: '127.0.0.1',
    cf: false,
  })
  url = (await mf.ready).origin
}, 60_000)

afterAll(async () => {
  await mf?.dispose()
  await new Promise((resolve) => echo?.close(resolve))
})

const counts = async () =>
  (await (await fetch(`${url}${COUNTS_PATH}`)).json()) as Record<string, number>

it('counts each operation once, by its billing class; the counts route itself is not counted', async () => {
  expect(await (await fetch(`${url}/`)).text()).toBe('ok')
  const deadline = Date.now() + 20_000
  let seen = await counts()
  while (!seen['invocation queue'] && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100))
    seen = await counts()
  }
  const echoOrigin = new URL((await mf.getBindings<{ ECHO_URL: string }>()).ECHO_URL).origin
  expect(seen).toEqual({
    'invocation fetch': 1,
    'kv write': 1,
    'kv read': 2,
    'kv list': 1,
    'kv delete': 1,
    'r2 class A': 1,
    'r2 class B': 2,
    'r2 free': 1,
    // 70,000 bytes of JSON and metadata: two 64 KB operations.
    'queue write': 4,
    [`subrequest ${echoOrigin}/ping`]: 1,
    'invocation queue': 1,
    'queue read': 4,
    'queue delete': 4,
  })
}, 60_000)
