/**
 * A stack's stores (stack.ts): the redis-server and Postgres cluster of its own when asked for,
 * its database layer on the Postgres it chose, and where its Redis is. What each starts is pushed
 * on `stops`, to be stopped in reverse order.
 * @module
 */
import { join } from 'node:path'
import { type DatabaseLayer, startDatabaseLayer } from './database-layer'
import { type PrivatePostgres, startPrivatePostgres } from './private-postgres'
import { type PrivateRedis, startPrivateRedis } from './private-redis'
import { createTestDatabase, REDIS_URL } from './services'
import type { RedisChoice, StackOptions } from './stack-options'
import type { Watchdog } from './watchdog'

/** Where the stack's Redis is: none for the embedded store. */
export function redisUrlOf(
  choice: RedisChoice,
  server: PrivateRedis | undefined,
): string | undefined {
  if (choice === 'embedded') return undefined
  if (choice === 'shared') return REDIS_URL
  if (choice === 'private') return server?.url
  return choice.url
}

/** The stack's own redis-server and Postgres cluster, when asked for (side by side). */
export async function startServers(
  options: StackOptions,
  watchdog: Watchdog | undefined,
  stops: Array<() => Promise<unknown>>,
): Promise<{ redisServer?: PrivateRedis; postgresServer?: PrivatePostgres }> {
  if (!watchdog) return {}
  const [redisResult, postgresResult] = await Promise.allSettled([
    options.redis === 'private' ? startPrivateRedis(join(watchdog.root, 'redis'), watchdog) : null,
    options.postgres === 'private' ? startPrivatePostgres(watchdog.root, watchdog) : null,
  ])
  const redisServer = redisResult.status === 'fulfilled' ? redisResult.value : null
  const postgresServer = postgresResult.status === 'fulfilled' ? postgresResult.value : null
  if (redisServer) stops.push(() => redisServer.stop())
  if (postgresServer) stops.push(() => postgresServer.close())
  if (redisResult.status === 'rejected') throw redisResult.reason
  if (postgresResult.status === 'rejected') throw postgresResult.reason
  return { redisServer: redisServer ?? undefined, postgresServer: postgresServer ?? undefined }
}

/** The stack's database layer (PGlite or a Postgres behind the Neon proxy), if it has one. */
export async function startDatabase(
  options: StackOptions,
  server: PrivatePostgres | undefined,
  stops: Array<() => Promise<unknown>>,
): Promise<DatabaseLayer | undefined> {
  const choice = options.postgres
  if (choice === undefined) return undefined
  const proxyPort = options.ports?.proxy
  let layer: DatabaseLayer
  if (choice === 'embedded') {
    layer = await startDatabaseLayer({ pgliteDir: options.pgliteDir, proxyPort })
  } else if (choice === 'fresh') {
    const db = await createTestDatabase()
    stops.push(() => db.drop())
    layer = await startDatabaseLayer({
      databaseUrl: db.url,
      createDatabase: false,
      migrate: false,
      proxyPort,
    })
  } else if (choice === 'private') {
    if (!server) throw new Error('no private Postgres')
    layer = await startDatabaseLayer({
      databaseUrl: server.databaseUrl('inbound_dedup_stack'),
      proxyPort,
    })
  } else {
    layer = await startDatabaseLayer({
      databaseUrl: choice.url,
      createDatabase: choice.create,
      migrate: choice.migrate,
      proxyPort,
    })
  }
  stops.push(() => layer.stop())
  return layer
}
