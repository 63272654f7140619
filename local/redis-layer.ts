/**
 * The Redis the Worker (and the Gmail poller) reach: the Upstash REST stand-in (upstash-rest.ts)
 * in front of a real Redis, or of the embedded in-memory store. It can be stopped and started
 * again on the same port (a Redis outage as the Worker sees it), and made slow. It counts the
 * commands it served, across restarts (the bench's cost per event).
 * @module
 */
import { once, type Stoppable } from './stoppable'
import { embeddedRedis, type RedisBackend, realRedis, startUpstashRest } from './upstash-rest'

export interface RedisLayerOptions {
  /** A real Redis (`redis://...`). Unset: the embedded in-memory store (lost on stop). */
  redisUrl?: string
  /** The bearer token clients must send (`UPSTASH_REDIS_REST_TOKEN`). */
  token: string
  /** @default 0 */
  port?: number
  /** @default '127.0.0.1' */
  host?: string
}

export interface RedisLayer extends Stoppable {
  mode: 'real' | 'embedded'
  /** `UPSTASH_REDIS_REST_URL` for the Worker and `@upstash/redis` (the same across restarts). */
  readonly url: string
  readonly port: number
  token: string
  /** Fault hook: delay every answer by `ms` (0 = off). */
  setLatency(ms: number): void
  /** Commands served so far (every start of this layer), by lower-case name. */
  commandCounts(): Record<string, number>
  /** After {@link stop}: serves again on the same port (the embedded store starts empty). */
  start(): Promise<void>
}

interface Running {
  url: string
  port: number
  setLatency(ms: number): void
  stop(): Promise<void>
}

async function listen(
  options: RedisLayerOptions,
  port: number,
  commandCounts: Map<string, number>,
): Promise<Running> {
  const backend: RedisBackend = options.redisUrl
    ? realRedis(options.redisUrl)
    : await embeddedRedis()
  try {
    const rest = await startUpstashRest({
      backend,
      token: options.token,
      port,
      host: options.host ?? '127.0.0.1',
      commandCounts,
    })
    return {
      url: rest.url,
      port: rest.port,
      setLatency: (ms) => rest.setLatency(ms),
      stop: once(async () => {
        await rest.close()
        await backend.close()
      }),
    }
  } catch (err) {
    await backend.close()
    throw err
  }
}

export async function startRedisLayer(options: RedisLayerOptions): Promise<RedisLayer> {
  const commandCounts = new Map<string, number>()
  let running = await listen(options, options.port ?? 0, commandCounts)
  const { url, port } = running
  return {
    mode: options.redisUrl ? 'real' : 'embedded',
    url,
    port,
    token: options.token,
    setLatency: (ms) => running.setLatency(ms),
    commandCounts: () => Object.fromEntries(commandCounts),
    stop: () => running.stop(),
    async start() {
      await running.stop()
      running = await listen(options, port, commandCounts)
    },
  }
}
