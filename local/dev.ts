/**
 * `npm run dev`: the whole system on this machine, with one command.
 *
 * In order: the database (DATABASE_URL: that Postgres, database created if missing, migrated;
 * unset: embedded PGlite under .data/pglite) behind the Neon WebSocket proxy; the Upstash REST
 * stand-in on UPSTASH_PORT (REDIS_URL: in front of that Redis; unset: embedded store); the origin
 * on ORIGIN_PORT; the Worker under `wrangler dev` on WORKER_PORT, wired to the local pieces.
 * Settings and secrets come from the environment, else .dev.vars, else .dev.vars.example.
 *
 * Ctrl-C (SIGINT), SIGTERM or SIGHUP stops everything it started; a second Ctrl-C kills at once.
 * If a child dies, the rest keeps running and the command to restart it is printed.
 * @module
 */
import { relative } from 'node:path'
import { loadDevVars } from './dev-vars'
import { redact } from './redact'
import {
  DEV_VARIABLES,
  ORIGIN_PORT,
  readPort,
  routeDevSettings,
  UPSTASH_PORT,
  WORKER_PORT,
} from './settings'
import {
  type DatabaseLayer,
  type OriginHandle,
  REPO_ROOT,
  type RedisLayer,
  type Stoppable,
  startDatabaseLayer,
  startOrigin,
  startRedisLayer,
  startWorkerDev,
  type WorkerDevHandle,
} from './stack'
import { readWranglerConfig } from './wrangler-config'

const say = (line = '') => process.stdout.write(`${line}\n`)
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)}s`

/** An empty value in the file means unset: the origin's own default applies. */
function withoutEmpty(values: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== ''))
}

/** Turns "address in use" into something a person can act on. */
function explain(err: unknown, what: string, portName?: string): Error {
  const error = err as NodeJS.ErrnoException
  if (error.code === 'EADDRINUSE' && portName) {
    return new Error(
      `${what}: port in use (another \`npm run dev\`?). Stop it, or set ${portName} to a free port.`,
    )
  }
  return new Error(`${what}: ${error.message}`)
}

async function main(): Promise<void> {
  const startedAt = performance.now()
  const config = readWranglerConfig()
  const devVars = loadDevVars({ root: REPO_ROOT, alsoFromEnvironment: DEV_VARIABLES })
  const values = devVars.values
  const routed = routeDevSettings(values)
  if (routed.unknown.length > 0) {
    say(`warning: ${routed.unknown.join(', ')}: in no settings table, passed to neither side`)
  }
  const ports = {
    upstash: readPort(values, UPSTASH_PORT),
    origin: readPort(values, ORIGIN_PORT),
    worker: readPort(values, WORKER_PORT),
  }
  const upstashToken = values.UPSTASH_REDIS_REST_TOKEN
  const sharedSecret = values.ORIGIN_SHARED_SECRET
  if (!upstashToken || !sharedSecret) {
    throw new Error(
      'UPSTASH_REDIS_REST_TOKEN and ORIGIN_SHARED_SECRET must be set (in .dev.vars or the environment; .dev.vars.example has dev values)',
    )
  }

  const started: Stoppable[] = []
  let shuttingDown = false
  const shutdown = async (reason: string, code: number) => {
    if (shuttingDown) return
    shuttingDown = true
    say(`\n${reason}: stopping everything...`)
    const bound = setTimeout(() => {
      say('some pieces did not stop within 30 s; exiting (their process groups get SIGKILL)')
      process.exit(1)
    }, 30_000)
    bound.unref()
    for (const piece of started.reverse()) {
      await piece.stop().catch((err: Error) => say(`  stop failed: ${err.message}`))
    }
    clearTimeout(bound)
    say('stopped.')
    process.exit(code)
  }
  let firstSignalAt = 0
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      if (!shuttingDown) {
        firstSignalAt = Date.now()
        void shutdown(signal, 0)
        return
      }
      // Ctrl-C reaches us twice at once (from the terminal, and forwarded by npm): only a second
      // press a moment later means "now". The exit hook SIGKILLs the children's groups.
      if (Date.now() - firstSignalAt < 1_000) return
      say('second signal: exiting now')
      process.exit(130)
    })
  }

  try {
    // 1. Database.
    let t = performance.now()
    const pgliteDir = `${REPO_ROOT}/.data/pglite`
    say(
      values.DATABASE_URL
        ? `database: Postgres at ${redact(values.DATABASE_URL)} ...`
        : `database: embedded PGlite in ${relative(process.cwd(), pgliteDir) || '.'} (DATABASE_URL unset; first start initialises it, ~6 s) ...`,
    )
    const database: DatabaseLayer = await startDatabaseLayer({
      databaseUrl: values.DATABASE_URL,
      pgliteDir,
    })
    started.push(database)
    const applied = database.migrations.match(/^Applied: .*/gm) ?? []
    say(`  ready in ${seconds(t)}; migrations: ${applied.length ? applied.length : 'up to date'}`)

    // 2. Redis (Upstash REST stand-in).
    t = performance.now()
    const redis: RedisLayer = await startRedisLayer({
      redisUrl: values.REDIS_URL,
      token: upstashToken,
      port: ports.upstash,
    }).catch((err) => {
      throw explain(err, 'Upstash stand-in', 'UPSTASH_PORT')
    })
    started.push(redis)
    say(
      `upstash: ${redis.url} in front of ${values.REDIS_URL ? redact(values.REDIS_URL) : 'the embedded in-memory store (REDIS_URL unset; lost on exit)'} (${seconds(t)})`,
    )

    // 3. Origin.
    t = performance.now()
    const originEnv: Record<string, string> = {
      ...database.originEnv,
      ...withoutEmpty(routed.origin),
      ORIGIN_SHARED_SECRET: sharedSecret,
    }
    // The Gmail poller claims in the same Redis as the Worker, through the same stand-in.
    originEnv.UPSTASH_REDIS_REST_URL = redis.url
    originEnv.UPSTASH_REDIS_REST_TOKEN = upstashToken
    const origin: OriginHandle = await startOrigin({
      port: ports.origin,
      env: originEnv,
      onLine: (line) => say(`[origin] ${line}`),
    }).catch((err) => {
      throw explain(err, 'origin', 'ORIGIN_PORT')
    })
    started.push(origin)
    say(`origin: ${origin.url} (${seconds(t)})`)

    // 4. Worker under wrangler dev.
    t = performance.now()
    const wrangler = await config
    const workerVars: Record<string, string> = { ...routed.worker }
    // [vars] from wrangler.toml stay as they are unless the environment overrides them.
    for (const name of Object.keys(wrangler.vars)) {
      const fromEnv = process.env[name]
      if (fromEnv) workerVars[name] = fromEnv
    }
    Object.assign(workerVars, {
      ORIGIN_URL: origin.url,
      UPSTASH_REDIS_REST_URL: redis.url,
      UPSTASH_REDIS_REST_TOKEN: upstashToken,
      ORIGIN_SHARED_SECRET: sharedSecret,
    })
    const worker: WorkerDevHandle = await startWorkerDev({
      port: ports.worker,
      vars: workerVars,
      onLine: (line) => {
        if (line.trim()) say(`[worker] ${line}`)
      },
    })
    started.push(worker)
    say(`worker: ${worker.url} (${seconds(t)})`)

    printSummary({ database, redis, origin, worker, devVars: devVars.source }, startedAt)
    watch(origin, worker, database, devVars.fromEnvironment, () => shuttingDown)
  } catch (err) {
    say(`\nnpm run dev failed: ${(err as Error).message}`)
    await shutdown('start-up failed', 1)
  }
}

function printSummary(
  s: {
    database: DatabaseLayer
    redis: RedisLayer
    origin: OriginHandle
    worker: WorkerDevHandle
    devVars: string
  },
  startedAt: number,
): void {
  const db =
    s.database.mode === 'pglite'
      ? `${s.database.databaseUrl}  (embedded PGlite; psql works)`
      : redact(s.database.databaseUrl)
  say()
  say(`inbound-dedup dev stack is up (${seconds(startedAt)}; settings from ${s.devVars})`)
  say(`  worker    ${s.worker.url}     wrangler dev; webhooks at /webhooks/{slack,twilio,telegram}`)
  say(`  origin    ${s.origin.url}     POST /v1/events, /healthz, /metrics`)
  say(`  upstash   ${s.redis.url}     Upstash REST stand-in (${s.redis.mode})`)
  say(`  neon ws   ${s.database.neonWsProxy}  Neon WebSocket proxy (NEON_WS_PROXY)`)
  say(`  postgres  ${db}`)
  say()
  say(`  try:  curl -s ${s.worker.url}/healthz`)
  say('        npx tsx local/send-webhook.ts --help   (signed vendor webhooks)')
  say('  Ctrl-C stops everything.')
  say()
}

/** When a child dies on its own, keep the rest running and say how to bring it back. */
function watch(
  origin: OriginHandle,
  worker: WorkerDevHandle,
  database: DatabaseLayer,
  fromEnvironment: string[],
  shuttingDown: () => boolean,
): void {
  const originExited = origin.exited
  originExited.then((exit) => {
    if (shuttingDown() || origin.exited !== originExited) return
    const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`
    // Never print secret values: the command reads them where they came from.
    const secretRef = fromEnvironment.includes('ORIGIN_SHARED_SECRET')
      ? '"$ORIGIN_SHARED_SECRET"'
      : `"$(sed -n 's/^ORIGIN_SHARED_SECRET=//p' ${devVarsFile()})"`
    const dbRef =
      database.mode === 'postgres' && fromEnvironment.includes('DATABASE_URL')
        ? '"$DATABASE_URL"'
        : database.databaseUrl
    const pool = database.originEnv.DB_POOL_MAX
      ? ` DB_POOL_MAX=${database.originEnv.DB_POOL_MAX}`
      : ''
    say()
    say(`origin exited (${how}); the worker, database and Redis keep running.`)
    say('Restart it in another terminal with:')
    say(
      `  ORIGIN_PORT=${origin.port} DATABASE_URL=${dbRef} NEON_WS_PROXY=${database.neonWsProxy}${pool} ORIGIN_SHARED_SECRET=${secretRef} npm run origin`,
    )
    say()
  })
  worker.exited.then((exit) => {
    if (shuttingDown()) return
    const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`
    say()
    say(`wrangler dev exited (${how}); the origin, database and Redis keep running.`)
    say('Restart the whole stack (Ctrl-C, then `npm run dev`) to bring the worker back.')
    say()
  })
}

function devVarsFile(): string {
  return loadDevVars({ root: REPO_ROOT, warn: () => {} }).source === '.dev.vars'
    ? '.dev.vars'
    : '.dev.vars.example'
}

main().catch((err: Error) => {
  say(`npm run dev failed: ${err.message}`)
  process.exit(1)
})
