/**
 * The gateway as the cost phase runs it (bench/cost.ts): the deployable bundle unchanged, behind
 * an entry module (local/worker-runtime.ts `entrySource`) that counts what the Worker asks of the
 * platform, inside workerd, as it happens:
 *
 * - invocations: each `fetch()` and `queue()` call (what Workers bills as requests);
 * - subrequests: each `fetch` the Worker makes, by origin and path (global `fetch`, wrapped);
 * - queue operations: per 64 KB of a message (Cloudflare's unit), written by `send` and
 *   `sendBatch` on any queue binding, read when a batch is delivered to `queue()`, deleted when a
 *   message is acked (explicitly, by `ackAll`, or implicitly when `queue()` returns);
 * - R2 operations on any bucket binding: class A (`put`, `list`, multipart), class B (`get`,
 *   `head`), free (`delete`);
 * - KV operations on any namespace binding: reads (`get`, `getWithMetadata`; a bulk get per
 *   key), writes (`put`), deletes, lists.
 *
 * Bindings are recognized by shape, not by name, so a binding added later (a KV namespace) is
 * counted without a change here. The counts are read at `GET /__bench/counts`, which is not
 * itself counted. The env handed to the Worker is wrapped once per env object (workerd hands the
 * same one to every request): the Worker's per-isolate caches keep working.
 * @module
 */

/** The counter names the entry uses; the values are plain numbers. */
export type WorkerCounts = Record<string, number>

export const COUNTS_PATH = '/__bench/counts'

export const COUNTING_ENTRY = `import worker from './index.js'

const counts = {}
const add = (name, n = 1) => { counts[name] = (counts[name] || 0) + n }
const CHUNK_BYTES = 64000
const METADATA_BYTES = 100
const encoder = new TextEncoder()
const chunksOf = (body) => {
  const bytes = typeof body === 'string' ? encoder.encode(body).length
    : body instanceof ArrayBuffer ? body.byteLength
    : ArrayBuffer.isView(body) ? body.byteLength
    : encoder.encode(JSON.stringify(body ?? null)).length
  return Math.max(1, Math.ceil((bytes + METADATA_BYTES) / CHUNK_BYTES))
}

const realFetch = globalThis.fetch
globalThis.fetch = function (input, init) {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url)
  add('subrequest ' + url.origin + url.pathname)
  return realFetch.call(this, input, init)
}

const isQueue = (b) => b && typeof b.send === 'function' && typeof b.sendBatch === 'function'
const isR2 = (b) => b && typeof b.head === 'function' && typeof b.createMultipartUpload === 'function'
const isKv = (b) => b && typeof b.getWithMetadata === 'function' && typeof b.list === 'function'

function countedQueue(queue) {
  return {
    send(body, options) {
      add('queue write', chunksOf(body))
      return queue.send(body, options)
    },
    sendBatch(messages, options) {
      for (const m of messages) add('queue write', chunksOf(m.body))
      return queue.sendBatch(messages, options)
    },
  }
}

const R2_CLASS = {
  put: 'r2 class A', list: 'r2 class A', createMultipartUpload: 'r2 class A',
  resumeMultipartUpload: 'r2 class A', get: 'r2 class B', head: 'r2 class B', delete: 'r2 free',
}
const KV_KIND = {
  get: 'kv read', getWithMetadata: 'kv read', put: 'kv write', delete: 'kv delete', list: 'kv list',
}

function countedMethods(binding, kinds) {
  return new Proxy(binding, {
    get(target, name) {
      const value = target[name]
      if (typeof value !== 'function') return value
      const kind = kinds[name]
      return (...args) => {
        if (kind) add(kind, Array.isArray(args[0]) ? args[0].length : 1)
        return value.apply(target, args)
      }
    },
  })
}

const wrapped = new WeakMap()
function counted(env) {
  let out = wrapped.get(env)
  if (out) return out
  out = {}
  for (const name of Object.keys(env)) {
    const b = env[name]
    out[name] = isQueue(b) ? countedQueue(b)
      : isR2(b) ? countedMethods(b, R2_CLASS)
      : isKv(b) ? countedMethods(b, KV_KIND)
      : b
  }
  wrapped.set(env, out)
  return out
}

function countedBatch(batch) {
  const settled = []
  const messages = batch.messages.map((m, i) => {
    const chunks = chunksOf(m.body)
    add('queue read', chunks)
    settled[i] = false
    const settle = (acked) => {
      if (settled[i]) return
      settled[i] = true
      if (acked) add('queue delete', chunks)
    }
    return {
      get id() { return m.id },
      get timestamp() { return m.timestamp },
      get body() { return m.body },
      get attempts() { return m.attempts },
      ack() { settle(true); m.ack() },
      retry(options) { settle(false); m.retry(options) },
    }
  })
  return {
    queue: batch.queue,
    messages,
    ackAll() { messages.forEach((m) => m.ack()) },
    retryAll(options) { messages.forEach((m) => m.retry(options)) },
    /** A handler that returned acked what it left unsettled. */
    settleRest() { messages.forEach((m, i) => { if (!settled[i]) m.ack() }) },
  }
}

export default {
  async fetch(request, env, ctx) {
    if (request.method === 'GET' && new URL(request.url).pathname === '${COUNTS_PATH}') {
      return Response.json(counts)
    }
    add('invocation fetch')
    return worker.fetch(request, counted(env), ctx)
  },
  async queue(batch, env, ctx) {
    add('invocation queue')
    const b = countedBatch(batch)
    await worker.queue(b, counted(env), ctx)
    b.settleRest()
  },
  email: (message, env, ctx) => worker.email(message, counted(env), ctx),
}
`

/** The counts so far of the Worker at `url`. */
export async function workerCounts(url: string): Promise<WorkerCounts> {
  const res = await fetch(`${url}${COUNTS_PATH}`, { signal: AbortSignal.timeout(10_000) })
  if (!res.ok) throw new Error(`${COUNTS_PATH} answered ${res.status}`)
  return (await res.json()) as WorkerCounts
}
