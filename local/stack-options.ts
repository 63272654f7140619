/**
 * What a stack (stack.ts) is asked for, {@link StackOptions} and its choices of Postgres, Redis
 * and Worker, and what it hands back, a {@link Stack}; and the error of a piece that did not start.
 * @module
 */
import type { Redis } from 'ioredis'
import type pg from 'pg'
import type { DatabaseDriver } from '../origin/db/driver'
import type { Balancer } from './balancer'
import type { DatabaseLayer } from './database-layer'
import type { OriginHandle } from './origin-process'
import type { PrivatePostgres } from './private-postgres'
import type { PrivateRedis } from './private-redis'
import type { RedisLayer } from './redis-layer'
import type { Stoppable } from './stoppable'
import type { Watchdog } from './watchdog'
import type {
  WorkerDevHandle,
  WorkerMiniflareHandle,
  WorkerMiniflareOptions,
} from './worker-runtime'

/**
 * - `embedded`: PGlite in {@link StackOptions.pgliteDir};
 * - `fresh`: a new database on the shared Postgres (local/services.ts), migrated, dropped on stop;
 * - `private`: a Postgres cluster of the stack's own (local/private-postgres.ts), to stop for real;
 * - `{ url }`: that database, created when missing and migrated unless told otherwise.
 */
export type PostgresChoice =
  | 'embedded'
  | 'fresh'
  | 'private'
  | { url: string; create?: boolean; migrate?: boolean }

/**
 * - `embedded`: the in-memory store (lost on stop);
 * - `shared`: the shared Redis (REDIS_URL, local/services.ts);
 * - `private`: a redis-server of the stack's own (local/private-redis.ts), to kill for real;
 * - `{ url }`: that Redis.
 */
export type RedisChoice = 'embedded' | 'shared' | 'private' | { url: string }

/** A Worker wired to the stack; `vars` go on top of wrangler.toml's [vars], under the wiring. */
export type WorkerSpec = (
  | ({ runtime?: 'miniflare' } & Omit<WorkerMiniflareOptions, 'vars' | 'guard'> & {
        vars?: Record<string, string>
      })
  | { runtime: 'dev'; vars?: Record<string, string>; port?: number; onLine?: (l: string) => void }
) & {
  /** This Worker's ORIGIN_URL instead of the stack's origin (the bench's slow proxy in front). */
  originUrl?: string
}

export type WorkerRun = WorkerDevHandle | WorkerMiniflareHandle

/** Each piece as it comes up, for progress lines (`npm run dev`). */
export type ReadyEvent =
  | { piece: 'database'; database: DatabaseLayer }
  | { piece: 'redis'; redis: RedisLayer }
  | { piece: 'origin'; origin: OriginHandle }
  | { piece: 'worker'; worker: WorkerRun }

export type StackPiece = ReadyEvent['piece'] | 'balancer' | 'servers'

/** A piece that did not start; `cause` is what it threw. */
export class StackStartError extends Error {
  readonly piece: StackPiece
  constructor(piece: StackPiece, cause: unknown) {
    super(`${piece}: ${(cause as Error).message}`, { cause })
    this.name = 'StackStartError'
    this.piece = piece
  }
}

export interface StackOptions {
  /** Omitted: no database, and then no origin processes (see `originUrl`). */
  postgres?: PostgresChoice
  /**
   * The origins' DATABASE_DRIVER: `pg` reaches Postgres over TCP (the Neon proxy is then not on
   * their path, and its `dropConnections` does not reach them). @default 'neon', through the proxy
   */
  databaseDriver?: DatabaseDriver
  /** Where PGlite keeps its files. @default '<repo>/.data/pglite' */
  pgliteDir?: string
  redis: RedisChoice
  /**
   * REDIS_KEY_PREFIX of the Worker and the origins. On the shared Redis or one at a URL, the keys
   * under it are deleted on stop.
   */
  keyPrefix?: string
  /** UPSTASH_REDIS_REST_TOKEN. @default a random one */
  upstashToken?: string
  /** ORIGIN_SHARED_SECRET of the origins and the Worker. @default a random one */
  originSecret?: string
  /** 0 or unset: any free port. `origin` is the first origin's. */
  ports?: { upstash?: number; origin?: number; worker?: number; proxy?: number }
  /** Names of the origin processes to start (pods). @default ['origin'] with a database, else [] */
  origins?: string[]
  /** Origin settings on top of the wiring (LOG_LEVEL, DOWNSTREAM_URL, DB_POOL_MAX, ...). */
  originEnv?: Record<string, string>
  /** The origins get the Upstash URL and token too: their Gmail poller claims where the Worker does. */
  originsUseRedis?: boolean
  onOriginLine?: (line: string) => void
  /** An origin running elsewhere (in a test's own process) that the Worker forwards to. */
  originUrl?: string
  /** A balancer (local/balancer.ts) in front of the origins, the first one behind it. */
  balancer?: boolean
  /** The gateway Worker. Unset: none (start one later with {@link Stack.startWorker}). */
  worker?: WorkerSpec
  /** A second Worker with the gateway's bindings from another wrangler config (the bench's verify-only baseline). */
  baselineWorker?: { wranglerConfig: string }
  /** Aborting during start-up stops what has started and rejects (Ctrl-C in `npm run dev`). */
  signal?: AbortSignal
  onReady?: (event: ReadyEvent) => void
}

export interface Stack extends Stoppable {
  /** Throws when the stack has none. */
  readonly database: DatabaseLayer
  redis: RedisLayer
  origins: OriginHandle[]
  /** The first origin; throws when there is none. */
  readonly origin: OriginHandle
  /** Where the Worker forwards: the balancer, the first origin, or `originUrl`. */
  originUrl: string
  balancer?: Balancer
  /** The gateway Worker; throws when there is none. */
  readonly worker: WorkerRun
  baselineWorker?: WorkerMiniflareHandle
  redisServer?: PrivateRedis
  postgresServer?: PrivatePostgres
  watchdog?: Watchdog
  originSecret: string
  upstashToken: string
  keyPrefix?: string
  /** The environment every origin gets (secrets included: do not print). */
  originEnv: Record<string, string>
  /** The Worker's bindings as wired (secrets included: do not print). */
  workerVars: Record<string, string>
  /** A small pool straight to the database (TCP, past the proxy) for assertions; made on first use. */
  readonly sql: pg.Pool
  /** A client of the Redis behind the stand-in (not the embedded store); made on first use. */
  readonly redisClient: Redis
  /** One more origin process on this database (a Gmail pod), not behind the balancer. */
  startOrigin(spec: { name: string; env?: Record<string, string> }): Promise<OriginHandle>
  /** One more Worker wired to this stack (a test entry, `wrangler dev` for the bench). */
  startWorker(spec: WorkerSpec): Promise<WorkerRun>
}
