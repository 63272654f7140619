/**
 * Dev/test stand-in for Upstash's REST API, enough for `@upstash/redis`: `POST /` (one command),
 * `POST /pipeline`, `POST /multi-exec`, bearer token, and the `Upstash-Encoding: base64` response
 * encoding the client asks for by default. Commands run on a real Redis (`REDIS_URL`), or, when
 * none is configured, on an embedded in-memory Redis (ioredis-mock: real SET NX PX/EX, TTLs, Lua).
 *
 * It counts the commands it runs, by name (what Upstash bills: a pipeline's or transaction's
 * commands each count), for the bench's cost per event.
 *
 * Not a production server: loopback only, one shared token, no ACLs.
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Redis } from 'ioredis'
import { timingSafeEqual } from '../shared/crypto'
import { readBody } from './http-body'

type Command = [string, ...(string | number)[]]
type Reply = Buffer | string | number | null | Reply[]

/** The one seam between the HTTP protocol and a Redis: real (ioredis) or embedded (ioredis-mock). */
export interface RedisBackend {
  run(command: Command): Promise<Reply>
  transaction(commands: Command[]): Promise<Array<{ error: string } | { result: Reply }>>
  close(): Promise<void>
}

export function realRedis(url: string): RedisBackend {
  // Bounded: a Redis that hangs makes commands fail after 10 s instead of holding requests forever.
  const redis = new Redis(url, {
    lazyConnect: false,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    connectTimeout: 3_000,
    commandTimeout: 10_000,
  })
  // Connection errors surface per command; without a listener ioredis logs them as unhandled.
  redis.on('error', () => {})
  return {
    run: ([name, ...args]) => redis.callBuffer(name, ...args) as Promise<Reply>,
    async transaction(commands) {
      const multi = redis.multi()
      for (const [name, ...args] of commands) multi.callBuffer(name, ...args)
      const results = (await multi.exec()) ?? []
      return results.map(([err, res]) => (err ? { error: err.message } : { result: res as Reply }))
    },
    async close() {
      redis.disconnect()
    },
  }
}

export async function embeddedRedis(): Promise<RedisBackend> {
  const { default: RedisMock } = await import('ioredis-mock')
  const redis = new RedisMock()
  // ioredis-mock runs each command synchronously when it is called (the promise only carries the
  // result), so a guard that reads the data and the command it guards happen in one tick.
  const data = (redis as unknown as { data: { get(key: string): unknown } }).data
  const call = (name: string, rawArgs: (string | number)[]): Promise<Reply> => {
    const lower = name.toLowerCase()
    const args = lower === 'set' ? normalizeSetOptions(rawArgs) : rawArgs
    const refusal = refuseLikeRedis(lower, args, data)
    if (refusal) return Promise.reject(new Error(refusal))
    const fn = (redis as unknown as Record<string, unknown>)[lower]
    if (typeof fn !== 'function') return Promise.reject(new Error(`ERR unknown command '${name}'`))
    return (fn as (...a: unknown[]) => Promise<Reply>).apply(redis, args)
  }
  return {
    run: ([name, ...args]) => call(name, args),
    async transaction(commands) {
      // Issue every command in one synchronous loop: no other request can run between them, which
      // is what MULTI/EXEC promises. Awaiting one by one would let other requests interleave.
      const pending = commands.map(([name, ...args]) => call(name, args))
      return Promise.all(
        pending.map((p) =>
          p.then(
            (result) => ({ result }),
            (err: Error) => ({ error: err.message }),
          ),
        ),
      )
    },
    async close() {
      redis.disconnect()
    },
  }
}

const INTEGER_COMMANDS = new Set(['incr', 'decr', 'incrby', 'decrby'])

/**
 * Errors real Redis gives that ioredis-mock does not: INCR on text answers NaN there and stores
 * "NaN"; Redis refuses and leaves the value alone. Returns the Redis error text, or null.
 */
function refuseLikeRedis(
  command: string,
  args: (string | number)[],
  data: { get(key: string): unknown },
): string | null {
  if (!INTEGER_COMMANDS.has(command) && command !== 'hincrby') return null
  const stored = data.get(String(args[0]))
  if (stored === undefined) return null
  if (command === 'hincrby') {
    if (typeof stored !== 'object' || stored === null || Buffer.isBuffer(stored)) return WRONGTYPE
    const field = (stored as Record<string, unknown>)[String(args[1])]
    return field === undefined || isInteger(field) ? null : 'ERR hash value is not an integer'
  }
  if (typeof stored === 'object' && !Buffer.isBuffer(stored)) return WRONGTYPE
  return isInteger(stored) ? null : 'ERR value is not an integer or out of range'
}

const WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'

function isInteger(value: unknown): boolean {
  return /^-?\d{1,19}$/.test(String(value))
}

const SET_OPTIONS = new Set(['NX', 'XX', 'PX', 'EX', 'PXAT', 'EXAT', 'GET', 'KEEPTTL'])

/** ioredis-mock only understands upper-case SET options; the Upstash client sends lower case. */
function normalizeSetOptions(args: (string | number)[]): (string | number)[] {
  return args.map((arg, i) =>
    i >= 2 && typeof arg === 'string' && SET_OPTIONS.has(arg.toUpperCase())
      ? arg.toUpperCase()
      : arg,
  )
}

function encode(reply: Reply, base64: boolean): unknown {
  if (reply === null || reply === undefined || typeof reply === 'number') return reply ?? null
  if (Array.isArray(reply)) return reply.map((r) => encode(r, base64))
  // ioredis (and the mock) turn HGETALL's flat array into an object; Upstash answers the flat array.
  if (typeof reply === 'object' && !Buffer.isBuffer(reply)) {
    return Object.entries(reply as Record<string, Reply>).flatMap(([k, v]) => [
      encode(k, base64),
      encode(v, base64),
    ])
  }
  const buf = typeof reply === 'string' ? Buffer.from(reply) : reply
  return base64 ? buf.toString('base64') : buf.toString('utf8')
}

function isCommand(value: unknown): value is Command {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    typeof value[0] === 'string' &&
    value.every((v) => typeof v === 'string' || typeof v === 'number')
  )
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  })
  res.end(text)
}

export interface UpstashRestOptions {
  backend: RedisBackend
  token: string
  port?: number
  host?: string
  /** Where the commands run are counted, by lower-case name. @default a map of this server's own */
  commandCounts?: Map<string, number>
}

export interface RunningUpstashRest {
  url: string
  port: number
  /** Test hook: delay every answer (a Redis slower than the gateway's budget). */
  setLatency(ms: number): void
  /** Commands run so far, by lower-case name (`set`, `eval`, ...). */
  commandCounts(): Record<string, number>
  close(): Promise<void>
}

export async function startUpstashRest(options: UpstashRestOptions): Promise<RunningUpstashRest> {
  const { backend, token } = options
  const counts = options.commandCounts ?? new Map<string, number>()
  const count = (commands: readonly Command[]) => {
    for (const [name] of commands) {
      const key = name.toLowerCase()
      counts.set(key, (counts.get(key) ?? 0) + 1)
    }
  }
  let latencyMs = 0

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') return send(res, 405, { error: 'ERR only POST is supported here' })
    const auth = req.headers.authorization ?? ''
    if (!timingSafeEqual(auth, `Bearer ${token}`)) return send(res, 401, { error: 'Unauthorized' })
    const base64 = String(req.headers['upstash-encoding'] ?? '').toLowerCase() === 'base64'
    let parsed: unknown
    try {
      parsed = JSON.parse(await readBody(req))
    } catch {
      return send(res, 400, { error: 'ERR failed to parse command' })
    }
    if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs))
    const path = (req.url ?? '/').split('?')[0]

    if (path === '/pipeline' || path === '/multi-exec') {
      if (!Array.isArray(parsed) || !parsed.every(isCommand)) {
        return send(res, 400, { error: 'ERR a pipeline is an array of commands' })
      }
      count(parsed)
      if (path === '/multi-exec') {
        try {
          const results = await backend.transaction(parsed)
          return send(
            res,
            200,
            results.map((r) => ('error' in r ? r : { result: encode(r.result, base64) })),
          )
        } catch (err) {
          return send(res, 400, { error: (err as Error).message })
        }
      }
      const results = await Promise.all(
        parsed.map((cmd) =>
          backend.run(cmd).then(
            (result) => ({ result: encode(result, base64) }),
            (err: Error) => ({ error: err.message }),
          ),
        ),
      )
      return send(res, 200, results)
    }
    if (path !== '/') return send(res, 404, { error: 'ERR unknown endpoint' })
    if (!isCommand(parsed)) return send(res, 400, { error: 'ERR a command is a JSON array' })
    count([parsed])
    try {
      return send(res, 200, { result: encode(await backend.run(parsed), base64) })
    } catch (err) {
      return send(res, 400, { error: (err as Error).message })
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      if (!res.headersSent) send(res, 500, { error: `ERR ${err.message}` })
    })
  })
  server.keepAliveTimeout = 30_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    setLatency(ms) {
      latencyMs = ms
    },
    commandCounts: () => Object.fromEntries(counts),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
