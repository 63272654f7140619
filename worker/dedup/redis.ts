/**
 * The few Redis operations the claim protocol needs (the seam), and their implementation over
 * Upstash's REST API with `@upstash/redis`. Every call is bounded: one attempt (`retries: 0`; the
 * client's default is 5 retries with backoff) and a fresh `AbortSignal.timeout` per call (a static
 * signal stays aborted after the first timeout, and the client then answers `null`, which would
 * read as "key exists"). A timeout or network error throws; the caller decides to fail open.
 * @module
 */
import { Redis } from '@upstash/redis/cloudflare'
import type { RedisConfig } from '../config'

export interface RedisPort {
  /** `SET key value NX PX ms GET`: null when this call set the key, else the value already there. */
  setNxGet(key: string, value: string, pxMs: number): Promise<string | null>
  /** `SET key value NX EX s GET`: the same, with a TTL in seconds (a record, not a lease). */
  setNxGetEx(key: string, value: string, exSeconds: number): Promise<string | null>
  /** Runs a Lua script (plain EVAL: one round trip always, no NOSCRIPT retry inside a budget). */
  evalScript(script: string, keys: string[], args: string[]): Promise<unknown>
  hincrby(key: string, field: string, by: number): Promise<number>
  ping(): Promise<void>
}

/** A Redis that replies with the server's error text, e.g. Upstash's `UpstashError`. */
function isSyntaxError(err: unknown): boolean {
  return err instanceof Error && /syntax error/i.test(err.message)
}

export function upstashPort(config: RedisConfig, timeoutMs: number): RedisPort {
  const redis = new Redis({
    url: config.url,
    token: config.token,
    retry: { retries: 0 },
    signal: () => AbortSignal.timeout(timeoutMs),
    enableTelemetry: false,
    // Values are our own short strings; the default JSON parsing would turn "123" into a number.
    automaticDeserialization: false,
    // Off: a pipeline shared by concurrent requests would resolve one request's promise from
    // another request's I/O, which workerd forbids; and each call should carry its own timeout.
    enableAutoPipelining: false,
    readYourWrites: false,
  })
  // Redis < 7 rejects NX together with GET; then claim with two calls (SET NX, then GET). The
  // second call leaves a window where the key can vanish; the caller treats that as inflight.
  let nxGetSupported = true

  async function setNxGetWith(
    key: string,
    value: string,
    expiry: { px: number } | { ex: number },
  ): Promise<string | null> {
    if (nxGetSupported) {
      try {
        return await redis.set<string>(key, value, { nx: true, get: true, ...expiry } as never)
      } catch (err) {
        if (!isSyntaxError(err)) throw err
        nxGetSupported = false
      }
    }
    const set = await redis.set(key, value, { nx: true, ...expiry } as never)
    if (set === 'OK') return null
    return (await redis.get<string>(key)) ?? ''
  }

  return {
    setNxGet: (key, value, pxMs) => setNxGetWith(key, value, { px: pxMs }),
    setNxGetEx: (key, value, exSeconds) => setNxGetWith(key, value, { ex: exSeconds }),
    evalScript: (script, keys, args) => redis.eval(script, keys, args),
    hincrby: (key, field, by) => redis.hincrby(key, field, by),
    async ping() {
      await redis.ping()
    },
  }
}
