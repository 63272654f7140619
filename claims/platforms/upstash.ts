/**
 * {@link RedisPort} over Upstash's REST API with `@upstash/redis` (its fetch-based build, which
 * runs in workerd and in Node alike: the Worker and the origin's Gmail poller use this one).
 * Every call is bounded: one attempt (`retries: 0`; the client's default is 5 retries with
 * backoff) and a fresh `AbortSignal.timeout` per call (a static signal stays aborted after the
 * first timeout, and the client then answers `null`, which would read as "key exists").
 * @module
 */
import { Redis } from '@upstash/redis/cloudflare'
import type { RedisPort } from '../port'
import type { RedisConfig } from '../settings'

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
