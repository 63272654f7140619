/**
 * The local stack as a library: `npm run dev`, the e2e tests, the fault suite and the benchmark
 * start the same pieces the same way, alone or together, each on a given port or on port 0.
 *
 * - {@link startDatabaseLayer}: a Postgres (real, created and migrated; or embedded PGlite) behind
 *   the Neon WebSocket proxy.
 * - {@link startRedisLayer}: the Upstash REST stand-in on a real Redis or the embedded store.
 * - {@link startOrigin}: `origin/main.ts` as a child process (a pod): kill, crash, restart.
 * - {@link startWorkerDev}: the Worker under `wrangler dev`; {@link startWorkerMiniflare}: the
 *   deployable bundle in Miniflare (faster, what the tests and the benchmark use).
 * - {@link startLocalStack}: all of them wired together.
 *
 * Every wait is bounded; every `stop()` is idempotent, stops whole process groups, and leaves
 * nothing listening.
 * @module
 */

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Miniflare } from 'miniflare'
import pg from 'pg'
import { parseListeningLine } from '../origin/listening-line'
import { migrate } from './migrate'
import { type RunningProxy, startNeonWsProxy } from './neon-ws-proxy'
import { type EmbeddedPostgres, startEmbeddedPostgres } from './pglite'
import { type ExitInfo, freePort, GroupProcess, ProcessError, waitForHttp } from './processes'
import { embeddedRedis, type RedisBackend, realRedis, startUpstashRest } from './upstash-rest'
import {
  buildWorker,
  miniflareQueueOptions,
  type QueueConsumerOverrides,
  REPO_ROOT,
  readWranglerConfig,
  WRANGLER_BIN,
  wranglerEnv,
} from './wrangler-config'

export { REPO_ROOT } from './wrangler-config'

/**
 * `node --import tsx`, not the `tsx` binary: that one runs the code in a second node process and
 * relays signals to it, SIGKILLing it when it does not acknowledge within 30 ms (a busy event loop
 * under load), which would turn a graceful SIGTERM into a crash. One process, one signal.
 */
const ORIGIN_COMMAND = [process.execPath, '--import', 'tsx', 'origin/main.ts'] as const

/** A piece of the stack that can be stopped; stopping twice is harmless. */
export interface Stoppable {
  stop(): Promise<void>
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined
  return () => {
    done ??= fn()
    return done
  }
}

// ---------------------------------------------------------------------------------------------
// Redis layer
// ---------------------------------------------------------------------------------------------

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
  /** `UPSTASH_REDIS_REST_URL` for the Worker and `@upstash/redis`. */
  url: string
  port: number
  token: string
  /** Fault hook: delay every answer by `ms` (0 = off). */
  setLatency(ms: number): void
}

export async function startRedisLayer(options: RedisLayerOptions): Promise<RedisLayer> {
  const backend: RedisBackend = options.redisUrl
    ? realRedis(options.redisUrl)
    : await embeddedRedis()
  try {
    const rest = await startUpstashRest({
      backend,
      token: options.token,
      port: options.port ?? 0,
      host: options.host ?? '127.0.0.1',
    })
    return {
      mode: options.redisUrl ? 'real' : 'embedded',
      url: rest.url,
      port: rest.port,
      token: options.token,
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

// ---------------------------------------------------------------------------------------------
// Database layer
// ---------------------------------------------------------------------------------------------

export interface DatabaseLayerOptions {
  /**
   * A real Postgres. Unset: embedded PGlite in {@link DatabaseLayerOptions.pgliteDir}.
   * The database named in the URL is created when missing (see `createDatabase`).
   */
  databaseUrl?: string
  /** @default true: `CREATE DATABASE` when the URL's database does not exist. */
  createDatabase?: boolean
  /** Apply migrations/ with dbmate. @default true */
  migrate?: boolean
  /** Where PGlite keeps its files. @default '<repo>/.data/pglite' */
  pgliteDir?: string
  /** Port of the Neon WebSocket proxy. @default 0 */
  proxyPort?: number
  /** Port of PGlite's Postgres wire-protocol socket. @default 0 */
  pglitePort?: number
}

export interface DatabaseLayer extends Stoppable {
  mode: 'postgres' | 'pglite'
  /** Plain TCP connection string (dbmate, `pg`, the origin's `DATABASE_URL`). */
  databaseUrl: string
  /** `host:port/v2` of the Neon proxy: the origin's `NEON_WS_PROXY`. */
  neonWsProxy: string
  /**
   * The environment an origin needs for this database: DATABASE_URL, NEON_WS_PROXY, and on
   * PGlite a small DB_POOL_MAX (one shared backend: more connections only queue).
   */
  originEnv: Record<string, string>
  /** dbmate's output ('' when nothing was applied or migrations were skipped). */
  migrations: string
  /** The embedded server, when mode is 'pglite'. */
  pglite?: EmbeddedPostgres
  /** Fault hook: the Neon proxy cuts every open connection (see `dropConnections`). */
  dropConnections(): number
}

/** PGlite runs one statement at a time for everyone: a few connections are plenty. */
export const PGLITE_POOL_MAX = 4

export async function startDatabaseLayer(
  options: DatabaseLayerOptions = {},
): Promise<DatabaseLayer> {
  let pglite: EmbeddedPostgres | undefined
  let databaseUrl: string
  if (options.databaseUrl) {
    databaseUrl = options.databaseUrl
    if (options.createDatabase !== false) await ensureDatabase(databaseUrl)
  } else {
    pglite = await startEmbeddedPostgres({
      dataDir: options.pgliteDir ?? join(REPO_ROOT, '.data', 'pglite'),
      port: options.pglitePort ?? 0,
    })
    databaseUrl = pglite.url
  }
  let proxy: RunningProxy | undefined
  try {
    const migrations = options.migrate === false ? '' : await migrate(databaseUrl)
    const target = new URL(databaseUrl)
    proxy = await startNeonWsProxy({
      target: { host: target.hostname, port: Number(target.port || 5432) },
      port: options.proxyPort ?? 0,
    })
    const running = proxy
    const originEnv: Record<string, string> = {
      DATABASE_URL: databaseUrl,
      NEON_WS_PROXY: running.wsProxy,
    }
    if (pglite) originEnv.DB_POOL_MAX = String(PGLITE_POOL_MAX)
    return {
      mode: pglite ? 'pglite' : 'postgres',
      databaseUrl,
      neonWsProxy: running.wsProxy,
      originEnv,
      migrations,
      pglite,
      dropConnections: () => running.dropConnections(),
      stop: once(async () => {
        await running.close()
        await pglite?.stop()
      }),
    }
  } catch (err) {
    await proxy?.close()
    await pglite?.stop()
    throw err
  }
}

/** Database names we create: letters, digits, underscore (no quoting surprises). */
const SAFE_DATABASE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/**
 * Creates the database named in `databaseUrl` when it does not exist, connecting to the same server's
 * `postgres` database. Returns true when it created one.
 */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl)
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''))
  if (!name || name === 'postgres') return false
  if (!SAFE_DATABASE_NAME.test(name)) {
    throw new Error(
      'the database name in DATABASE_URL may only hold letters, digits and _ (create it yourself otherwise)',
    )
  }
  url.pathname = '/postgres'
  const admin = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5_000 })
  await admin.connect()
  try {
    const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (found.rowCount) return false
    try {
      await admin.query(`CREATE DATABASE "${name}"`)
    } catch (err) {
      // Another process created it between our check and our CREATE: fine.
      if ((err as { code?: string }).code !== '42P04') throw err
    }
    return true
  } finally {
    await admin.end()
  }
}

// ---------------------------------------------------------------------------------------------
// Origin processes
// ---------------------------------------------------------------------------------------------

export interface OriginOptions {
  /** 0 = any free port; kept across restarts once known. @default 0 */
  port?: number
  /** @default '127.0.0.1' */
  host?: string
  /**
   * The origin's configuration (DATABASE_URL, NEON_WS_PROXY, ORIGIN_SHARED_SECRET, ...). Origin
   * settings present in this process's environment are NOT inherited: only what is given here.
   */
  env: Record<string, string>
  /** Bound on start-up (tsx compiles on the fly; two busy cores are slow). @default 30000 */
  readyTimeoutMs?: number
  /** Each output line (JSON logs), secrets masked. */
  onLine?: (line: string) => void
  /** For messages. @default 'origin' */
  name?: string
}

export interface OriginHandle extends Stoppable {
  /** http://host:port (stable across restarts). */
  readonly url: string
  readonly port: number
  /** Process id (and process group id) of the current run. */
  readonly pid: number
  /** Whether the current run is up (false after kill/stop, or if it died by itself). */
  readonly running: boolean
  /** The current run's exit; settles when it ends for any reason. */
  readonly exited: Promise<ExitInfo>
  /** Last output lines of the current run. */
  output(lines?: number): string
  /** Ends the current run: SIGKILL (a crash, the default) or SIGTERM (graceful, bounded). */
  kill(signal?: 'SIGKILL' | 'SIGTERM'): Promise<ExitInfo>
  /** Starts again on the same port with the same env (stops the current run first if needed). */
  restart(): Promise<void>
}

/** Origin settings a caller must give explicitly rather than inherit by accident. */
/**
 * Settings the origin reads. A started origin gets only what the caller passes, never a stray value
 * from the calling shell (a DOWNSTREAM_URL or GMAIL_* there must not reach every test origin).
 */
const ORIGIN_ENV_KEYS = [
  'DATABASE_URL',
  'NEON_WS_PROXY',
  'ORIGIN_PORT',
  'ORIGIN_HOST',
  'ORIGIN_SHARED_SECRET',
  'DB_POOL_MAX',
  'DB_QUERY_TIMEOUT_MS',
  'DB_CONNECT_TIMEOUT_MS',
  'MAX_EVENT_BYTES',
  'LOG_LEVEL',
  'REDIS_KEY_PREFIX',
  'DEDUP_TTL_SECONDS',
  'CLAIM_LEASE_MS',
  'REDIS_TIMEOUT_MS',
  'ORIGIN_TIMEOUT_MS',
]
const ORIGIN_ENV_PREFIXES = ['GMAIL_', 'DOWNSTREAM_', 'OUTBOX_', 'FAILURE_', 'UPSTASH_']

export function originProcessEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const key of Object.keys(base)) {
    if (ORIGIN_ENV_KEYS.includes(key) || ORIGIN_ENV_PREFIXES.some((p) => key.startsWith(p))) {
      delete base[key]
    }
  }
  return { ...base, ...env }
}

/**
 * Starts `origin/main.ts` (through tsx) in its own process group and waits for its listening line.
 * @example
 * const origin = await startOrigin({ env: { ...db.originEnv, ORIGIN_SHARED_SECRET: secret } })
 * await origin.kill('SIGKILL') // crash a pod
 * await origin.restart()
 */
export async function startOrigin(options: OriginOptions): Promise<OriginHandle> {
  const host = options.host ?? '127.0.0.1'
  const name = options.name ?? 'origin'
  const secrets = [options.env.ORIGIN_SHARED_SECRET ?? '', options.env.DATABASE_URL ?? '']
    .flatMap((value) => value.split(','))
    .filter(Boolean)
  let port = options.port ?? 0
  let current: GroupProcess
  let url = ''
  let stopped = false

  async function launch(): Promise<void> {
    const child = new GroupProcess({
      name,
      command: ORIGIN_COMMAND[0],
      args: ORIGIN_COMMAND.slice(1),
      cwd: REPO_ROOT,
      env: originProcessEnv({ ...options.env, ORIGIN_PORT: String(port), ORIGIN_HOST: host }),
      secrets,
      onLine: options.onLine,
    })
    current = child
    try {
      url = await child.waitForLine(parseListeningLine, options.readyTimeoutMs ?? 30_000)
    } catch (err) {
      await child.stop({ signal: 'SIGKILL' }).catch(() => {})
      throw err
    }
    port = Number(new URL(url).port)
  }

  await launch()
  const handle: OriginHandle = {
    get url() {
      return url
    },
    get port() {
      return port
    },
    get pid() {
      return current.pid
    },
    get running() {
      return current.exit === undefined && !stopped
    },
    get exited() {
      return current.exited
    },
    output: (lines) => current.output(lines),
    kill: (signal = 'SIGKILL') => current.stop({ signal, graceMs: 10_000 }),
    async restart() {
      await current.stop({ graceMs: 10_000 })
      stopped = false
      await launch()
    },
    async stop() {
      stopped = true
      await current.stop({ graceMs: 10_000 })
    },
  }
  return handle
}

// ---------------------------------------------------------------------------------------------
// The Worker: wrangler dev, or the built bundle in Miniflare
// ---------------------------------------------------------------------------------------------

export interface WorkerOptions {
  /** 0 = pick a free port. @default 0 */
  port?: number
  /**
   * Bindings on top of wrangler.toml's [vars]: secrets and overrides (ORIGIN_URL,
   * UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN, ORIGIN_SHARED_SECRET, ...).
   */
  vars: Record<string, string>
  /** Names in `vars` whose values are secret (masked in output). @default every name containing SECRET, TOKEN or KEY */
  secretNames?: string[]
  readyTimeoutMs?: number
  onLine?: (line: string) => void
}

export interface WorkerHandle extends Stoppable {
  url: string
  port: number
}

export interface WorkerDevHandle extends WorkerHandle {
  readonly pid: number
  readonly exited: Promise<ExitInfo>
  output(lines?: number): string
}

function secretValues(vars: Record<string, string>, names?: string[]): string[] {
  const isSecret = (name: string) =>
    names ? names.includes(name) : /SECRET|TOKEN|KEY|PASSWORD/i.test(name)
  return Object.entries(vars)
    .filter(([name]) => isSecret(name))
    .flatMap(([, value]) => value.split(','))
    .filter(Boolean)
}

/**
 * `wrangler dev` (local mode) in its own process group, ready when GET /healthz answers.
 * Secrets go in as `--var` (visible to `ps` on this machine, never printed by us: masked in output).
 */
export async function startWorkerDev(options: WorkerOptions): Promise<WorkerDevHandle> {
  const port = options.port || (await freePort())
  const inspectorPort = await freePort()
  mkdirSync(join(REPO_ROOT, '.wrangler', 'config'), { recursive: true })
  const args = [
    'dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--inspector-port',
    String(inspectorPort),
    '--show-interactive-dev-session=false',
  ]
  for (const [key, value] of Object.entries(options.vars)) args.push('--var', `${key}:${value}`)
  const child = new GroupProcess({
    name: 'wrangler dev',
    command: WRANGLER_BIN,
    args,
    cwd: REPO_ROOT,
    env: wranglerEnv(),
    secrets: secretValues(options.vars, options.secretNames),
    onLine: options.onLine,
  })
  const url = `http://127.0.0.1:${port}`
  try {
    await waitForHttp(`${url}/healthz`, {
      timeoutMs: options.readyTimeoutMs ?? 60_000,
      abort: child.exited,
    })
  } catch (err) {
    await child.stop({ signal: 'SIGKILL' }).catch(() => {})
    if (child.exit) throw child.exitedEarly(child.exit)
    throw err instanceof ProcessError ? child.notReady(err.message) : err
  }
  return {
    url,
    port,
    pid: child.pid,
    exited: child.exited,
    output: (lines) => child.output(lines),
    stop: once(async () => {
      await child.stop({ graceMs: 5_000 })
    }),
  }
}

export interface WorkerMiniflareOptions extends WorkerOptions {
  /** Where the bundle goes. @default a fresh temporary directory, removed on stop */
  outDir?: string
  /**
   * Source of an ES module served instead of the bundle, which it imports as `./index.js`
   * unchanged: tests wrap the Worker to call a handler Miniflare cannot trigger as they need
   * (`email()` with a message of their own). @default the bundle itself
   */
  entrySource?: string
  /** Changes to wrangler.toml's queue consumer settings (e.g. `{ max_batch_timeout: 0 }`). */
  queueConsumers?: QueueConsumerOverrides
}

export interface WorkerMiniflareHandle extends WorkerHandle {
  miniflare: Miniflare
}

/**
 * Builds the deployable bundle (`wrangler deploy --dry-run`) and serves it with Miniflare on
 * 127.0.0.1, with wrangler.toml's compatibility settings, [vars] plus `vars`, and its queues (the
 * spool and its dead letters, consumed by the same Worker). `/cdn-cgi/handler/email` is enabled.
 */
export async function startWorkerMiniflare(
  options: WorkerMiniflareOptions,
): Promise<WorkerMiniflareHandle> {
  const outDir = options.outDir ?? mkdtempSync(join(tmpdir(), 'inbound-dedup-worker-'))
  const removeOutDir = options.outDir === undefined
  try {
    const [config, scriptPath, { Miniflare }] = await Promise.all([
      readWranglerConfig(),
      buildWorker(outDir),
      import('miniflare'),
    ])
    const entryPath = join(outDir, 'entry.js')
    if (options.entrySource !== undefined) writeFileSync(entryPath, options.entrySource)
    const { onLine } = options
    const miniflare = new Miniflare({
      name: config.name,
      scriptPath: options.entrySource === undefined ? scriptPath : entryPath,
      modules: true,
      // The bundle is an ES module; by default Miniflare reads an imported .js as CommonJS.
      modulesRules: [{ type: 'ESModule', include: ['**/*.js'] }],
      modulesRoot: outDir,
      compatibilityDate: config.compatibilityDate,
      compatibilityFlags: config.compatibilityFlags,
      bindings: { ...config.vars, ...options.vars },
      ...miniflareQueueOptions(config, options.queueConsumers),
      port: options.port ?? 0,
      host: '127.0.0.1',
      cf: false,
      unsafeTriggerHandlers: true,
      // The Worker's log lines go to `onLine` when given (else Miniflare prints them). The
      // handler must return nothing: Miniflare checks, and fails the request otherwise.
      ...(onLine
        ? {
            handleStructuredLogs: ({ message }: { message: string }) => {
              onLine(message)
            },
          }
        : {}),
    })
    let url: URL
    try {
      url = await withTimeout(miniflare.ready, options.readyTimeoutMs ?? 30_000, 'Miniflare')
    } catch (err) {
      await miniflare.dispose().catch(() => {})
      throw err
    }
    return {
      url: url.origin,
      port: Number(url.port),
      miniflare,
      stop: once(async () => {
        await withTimeout(miniflare.dispose(), 10_000, 'Miniflare dispose')
        if (removeOutDir) rmSync(outDir, { recursive: true, force: true })
      }),
    }
  } catch (err) {
    if (removeOutDir) rmSync(outDir, { recursive: true, force: true })
    throw err
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(
        () => reject(new ProcessError('not_ready', `${what} did not finish within ${ms} ms`)),
        ms,
      )
    }),
  ])
}

// ---------------------------------------------------------------------------------------------
// Everything together
// ---------------------------------------------------------------------------------------------

export interface LocalStackOptions {
  /** Real Postgres; unset = PGlite in `pgliteDir`. */
  databaseUrl?: string
  pgliteDir?: string
  /** Real Redis; unset = embedded store. */
  redisUrl?: string
  upstashToken: string
  originSharedSecret: string
  /** Extra origin env (LOG_LEVEL, DB_POOL_MAX, ...). */
  originEnv?: Record<string, string>
  /** How the Worker runs. @default 'miniflare' */
  worker?: 'dev' | 'miniflare' | 'none'
  /** Worker vars on top of the wiring (vendor secrets, REDIS_KEY_PREFIX, ...). */
  workerVars?: Record<string, string>
  ports?: { upstash?: number; origin?: number; worker?: number; proxy?: number }
  onOriginLine?: (line: string) => void
  onWorkerLine?: (line: string) => void
}

export interface LocalStack extends Stoppable {
  database: DatabaseLayer
  redis: RedisLayer
  origin: OriginHandle
  worker?: WorkerDevHandle | WorkerMiniflareHandle
  /** The Worker's bindings as wired (secrets included: do not print). */
  workerVars: Record<string, string>
}

/** Starts database, Redis, origin and (optionally) the Worker; on any failure stops what started. */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const started: Stoppable[] = []
  const stopAll = once(async () => {
    for (const piece of started.reverse()) await piece.stop().catch(() => {})
  })
  try {
    // allSettled, not all: if one fails, the other must have finished before we stop it.
    const [databaseResult, redisResult] = await Promise.allSettled([
      startDatabaseLayer({
        databaseUrl: options.databaseUrl,
        pgliteDir: options.pgliteDir,
        proxyPort: options.ports?.proxy,
      }),
      startRedisLayer({
        redisUrl: options.redisUrl,
        token: options.upstashToken,
        port: options.ports?.upstash,
      }),
    ])
    for (const result of [databaseResult, redisResult]) {
      if (result.status === 'fulfilled') started.push(result.value)
    }
    if (databaseResult.status === 'rejected') throw databaseResult.reason
    if (redisResult.status === 'rejected') throw redisResult.reason
    const database = databaseResult.value
    const redis = redisResult.value
    const origin = await startOrigin({
      port: options.ports?.origin,
      env: {
        ...database.originEnv,
        ORIGIN_SHARED_SECRET: options.originSharedSecret,
        ...options.originEnv,
      },
      onLine: options.onOriginLine,
    })
    started.push(origin)
    const workerVars = {
      ...options.workerVars,
      ORIGIN_URL: origin.url,
      ORIGIN_SHARED_SECRET: options.originSharedSecret,
      UPSTASH_REDIS_REST_URL: redis.url,
      UPSTASH_REDIS_REST_TOKEN: redis.token,
    }
    let worker: WorkerDevHandle | WorkerMiniflareHandle | undefined
    const mode = options.worker ?? 'miniflare'
    if (mode !== 'none') {
      const workerOptions = {
        port: options.ports?.worker,
        vars: workerVars,
        onLine: options.onWorkerLine,
      }
      worker =
        mode === 'dev'
          ? await startWorkerDev(workerOptions)
          : await startWorkerMiniflare(workerOptions)
      started.push(worker)
    }
    return { database, redis, origin, worker, workerVars, stop: stopAll }
  } catch (err) {
    await stopAll()
    throw err
  }
}
