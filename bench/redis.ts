/**
 * Redis-side measurements: the `redis-benchmark` baseline (the claim's own command, SET NX PX GET,
 * straight at the same Redis), and what a dedup key costs (`MEMORY USAGE` of sample keys, and
 * `INFO memory` `used_memory` before and after keys created through the real claim path).
 * @module
 */
import { execFile } from 'node:child_process'
import type { Redis } from 'ioredis'
import { decodeValue } from '../claims'
import { round, sleep } from './util'

export interface RedisBenchmarkResult {
  status: 'ok' | 'skipped' | 'failed'
  /** Why it was skipped or failed. */
  note?: string
  command?: string
  requests?: number
  concurrency?: number
  rps?: number
  p50?: number
  p95?: number
  p99?: number
}

/**
 * `redis-benchmark -n N -c C -r 100000 --csv SET <prefix>rb:__rand_int__ <claim value> NX PX 60000 GET`.
 * Missing tool: skipped (with how to install it), never a failure of the run.
 */
export function redisBenchmark(
  redisUrl: string,
  keyPrefix: string,
  requests: number,
  concurrency: number,
): Promise<RedisBenchmarkResult> {
  const url = new URL(redisUrl)
  const value = 'inflight|0123456789abcdef|0123456789abcdef'
  const command = ['SET', `${keyPrefix}rb:__rand_int__`, value, 'NX', 'PX', '60000', 'GET']
  const args = [
    '-h',
    url.hostname || '127.0.0.1',
    '-p',
    url.port || '6379',
    '-n',
    String(requests),
    '-c',
    String(concurrency),
    '-r',
    '100000',
    '--csv',
    ...command,
  ]
  if (url.password) args.push('-a', decodeURIComponent(url.password))
  const shown = `redis-benchmark -n ${requests} -c ${concurrency} -r 100000 ${command.join(' ')}`
  return new Promise((resolve) => {
    execFile(
      'redis-benchmark',
      args,
      { timeout: 60_000, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err && (err as NodeJS.ErrnoException).code === 'ENOENT') {
          resolve({
            status: 'skipped',
            note: 'skipped: redis-benchmark not found (apt-get install -y redis-tools)',
          })
          return
        }
        if (err) {
          resolve({
            status: 'failed',
            note: `redis-benchmark failed: ${stderr.trim() || err.message}`,
          })
          return
        }
        const parsed = parseCsv(stdout)
        if (!parsed) {
          resolve({ status: 'failed', note: 'redis-benchmark printed no CSV result' })
          return
        }
        resolve({ status: 'ok', command: shown, requests, concurrency, ...parsed })
      },
    )
  })
}

/** The data line of `--csv` output: "test","rps","avg","min","p50","p95","p99","max". */
function parseCsv(
  stdout: string,
): Pick<RedisBenchmarkResult, 'rps' | 'p50' | 'p95' | 'p99'> | null {
  const lines = stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('"'))
  const header = lines[0]?.split(',').map((c) => c.replaceAll('"', ''))
  const data = lines[1]
  if (!header || !data) return null
  // The test name holds no commas only if the command has none; read the numbers from the right.
  const cells = data.split(',').map((c) => c.replaceAll('"', ''))
  const numbers = cells.slice(cells.length - (header.length - 1)).map(Number)
  const at = (name: string) => numbers[header.indexOf(name) - 1]
  const rps = at('rps')
  if (rps === undefined || Number.isNaN(rps)) return null
  return {
    rps: round(rps, 0),
    p50: at('p50_latency_ms'),
    p95: at('p95_latency_ms'),
    p99: at('p99_latency_ms'),
  }
}

/** `INFO memory` → used_memory (bytes). */
export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory')
  const match = /^used_memory:(\d+)/m.exec(info)
  if (!match?.[1]) throw new Error('INFO memory has no used_memory')
  return Number(match[1])
}

/** Keys under `pattern` (SCAN, never KEYS: the Redis is shared). */
export async function scanKeys(redis: Redis, pattern: string, limit = Infinity): Promise<string[]> {
  const keys: string[] = []
  let cursor = '0'
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = next
    keys.push(...batch)
  } while (cursor !== '0' && keys.length < limit)
  return keys.slice(0, limit === Infinity ? undefined : limit)
}

/** Waits until no key under the prefix is still `inflight` (completes run after the answer). */
export async function waitForSettledKeys(
  redis: Redis,
  prefix: string,
  timeoutMs: number,
): Promise<number> {
  const until = Date.now() + timeoutMs
  let inflight = 0
  do {
    const keys = await scanKeys(redis, `${prefix}dedup:*`)
    inflight = 0
    for (let i = 0; i < keys.length; i += 500) {
      const values = await redis.mget(...keys.slice(i, i + 500))
      inflight += values.filter((v) => v?.startsWith('inflight|')).length
    }
    if (inflight === 0) return 0
    await sleep(200)
  } while (Date.now() < until)
  return inflight
}

export async function countDedupKeys(redis: Redis, prefix: string): Promise<number> {
  return (await scanKeys(redis, `${prefix}dedup:*`)).filter((k) => !k.endsWith('dedup:stats'))
    .length
}

export interface KeyMemory {
  sampled: number
  /** MEMORY USAGE (SAMPLES 0) of the keys as the bench wrote them (run prefix included), bytes. */
  avgBytes: number
  minBytes: number
  maxBytes: number
  avgKeyLength: number
  avgValueLength: number
  /**
   * The same keys as production names them (REDIS_KEY_PREFIX empty): each value copied for a
   * moment to the key without the run prefix (NX, 60 s TTL, deleted at once) and measured there.
   */
  production: { avgBytes: number; avgKeyLength: number }
  /** Production-shaped MEMORY USAGE by key namespace (slack, whatsapp, telegram), bytes. */
  byNamespace: Record<string, { keys: number; avgBytes: number; avgKeyLength: number }>
  /** Values by state: done / inflight / other. */
  states: Record<string, number>
  /** One sample key with the run's prefix cut off, to show the shape. */
  exampleKey: string
  exampleValue: string
}

const memoryUsage = (redis: Redis, key: string) =>
  redis.call('MEMORY', 'USAGE', key, 'SAMPLES', '0') as Promise<number | null>

/** MEMORY USAGE of `value` stored under `key` for a moment (NX, so nothing is overwritten). */
async function measureAs(redis: Redis, key: string, value: string): Promise<number | null> {
  const set = await redis.set(key, value, 'EX', 60, 'NX')
  if (set !== 'OK') return null
  try {
    return await memoryUsage(redis, key)
  } finally {
    await redis.del(key)
  }
}

const average = (values: number[]) =>
  round(values.reduce((a, b) => a + b, 0) / Math.max(1, values.length), 1)

/**
 * `MEMORY USAGE` of up to `count` dedup keys under `prefix` (the stats hash excluded), taken in
 * turn from each namespace so every channel's key shape is in the sample.
 */
export async function sampleKeyMemory(
  redis: Redis,
  prefix: string,
  count: number,
): Promise<KeyMemory> {
  const all = (await scanKeys(redis, `${prefix}dedup:*`)).filter((k) => !k.endsWith('dedup:stats'))
  const byNs = new Map<string, string[]>()
  for (const key of all) {
    const ns = key.slice(prefix.length).split(':')[1] ?? '?'
    byNs.set(ns, [...(byNs.get(ns) ?? []), key])
  }
  const perNs = Math.max(1, Math.ceil(count / Math.max(1, byNs.size)))
  const keys = [...byNs.values()].flatMap((list) => list.slice(0, perNs))
  const sizes: number[] = []
  const production: number[] = []
  const productionKeyLengths: number[] = []
  const nsSizes = new Map<string, { bytes: number[]; lengths: number[] }>()
  const states: Record<string, number> = {}
  let keyLength = 0
  let valueLength = 0
  let exampleKey = ''
  let exampleValue = ''
  for (const key of keys) {
    const [bytes, value] = await Promise.all([memoryUsage(redis, key), redis.get(key)])
    if (bytes === null || value === null) continue
    sizes.push(bytes)
    keyLength += Buffer.byteLength(key)
    valueLength += Buffer.byteLength(value)
    const decoded = decodeValue(value)
    const state = decoded.status === 'settled' ? decoded.state : decoded.status
    states[state] = (states[state] ?? 0) + 1
    const bare = key.slice(prefix.length)
    if (!exampleKey) {
      exampleKey = bare
      exampleValue = value
    }
    const prodBytes = await measureAs(redis, bare, value)
    if (prodBytes === null) continue
    production.push(prodBytes)
    productionKeyLengths.push(Buffer.byteLength(bare))
    const ns = bare.split(':')[1] ?? '?'
    const entry = nsSizes.get(ns) ?? { bytes: [], lengths: [] }
    entry.bytes.push(prodBytes)
    entry.lengths.push(Buffer.byteLength(bare))
    nsSizes.set(ns, entry)
  }
  const n = sizes.length || 1
  return {
    sampled: sizes.length,
    avgBytes: average(sizes),
    minBytes: sizes.length ? Math.min(...sizes) : 0,
    maxBytes: sizes.length ? Math.max(...sizes) : 0,
    avgKeyLength: round(keyLength / n, 1),
    avgValueLength: round(valueLength / n, 1),
    production: { avgBytes: average(production), avgKeyLength: average(productionKeyLengths) },
    byNamespace: Object.fromEntries(
      [...nsSizes].map(([ns, { bytes, lengths }]) => [
        ns,
        { keys: bytes.length, avgBytes: average(bytes), avgKeyLength: average(lengths) },
      ]),
    ),
    states,
    exampleKey,
    exampleValue,
  }
}
