/**
 * The Node-side servers of the worker tests, run as a child process of the global setup (with
 * `node --import tsx`): the Workers test pool changes how Vite resolves modules for the whole
 * project, which breaks CommonJS packages such as ioredis in the setup itself, so they run here.
 *
 * Prints one JSON line with the URLs, then serves until stdin closes or SIGTERM, and then closes
 * everything and deletes the run's Redis keys.
 * - the Upstash REST stand-in on the real Redis;
 * - a second stand-in on the same Redis that answers slower than the Worker's Redis budget;
 * - a URL where nothing listens (Redis unreachable);
 * - a fake origin (fake-origin.ts);
 * - the Teams tests' stand-in for login.botframework.com (local/key-documents.ts).
 * @module
 */
import { createServer } from 'node:net'
import { startKeyDocuments } from '../../../local/key-documents'
import { assertServicesUp, deleteRedisPrefix, REDIS_URL, runId } from '../../../local/services'
import { realRedis, startUpstashRest } from '../../../local/upstash-rest'
import { TEST_SECRETS } from '../../../local/vendor-deliveries'
import { startFakeOrigin } from './fake-origin'

/** Far past the Worker's Redis budget and Slack's 3 s deadline. */
export const SLOW_REDIS_LATENCY_MS = 4_000

export interface TestServers {
  redisUrl: string
  slowRedisUrl: string
  deadRedisUrl: string
  redisToken: string
  keyPrefix: string
  originUrl: string
  keyDocumentsUrl: string
}

async function unusedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

async function main(): Promise<void> {
  await assertServicesUp()
  const token = `wt-${runId()}`
  const keyPrefix = `test:workers:${runId()}:`
  const redis = await startUpstashRest({ backend: realRedis(REDIS_URL), token })
  const slowRedis = await startUpstashRest({ backend: realRedis(REDIS_URL), token })
  slowRedis.setLatency(SLOW_REDIS_LATENCY_MS)
  const origin = await startFakeOrigin([TEST_SECRETS.origin])
  const keyDocuments = await startKeyDocuments()

  const servers: TestServers = {
    redisUrl: redis.url,
    slowRedisUrl: slowRedis.url,
    deadRedisUrl: `http://127.0.0.1:${await unusedPort()}`,
    redisToken: token,
    keyPrefix,
    originUrl: origin.url,
    keyDocumentsUrl: keyDocuments.url,
  }
  process.stdout.write(`${JSON.stringify(servers)}\n`)

  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await Promise.all([redis.close(), slowRedis.close(), origin.close(), keyDocuments.close()])
    await deleteRedisPrefix(keyPrefix)
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  process.stdin.on('end', stop)
  process.stdin.resume()
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`)
  process.exit(1)
})
