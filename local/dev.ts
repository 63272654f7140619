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
import { join, relative } from 'node:path'
import { writeDevStack } from '../origin/failures/dev-stack'
import { WEBHOOK_CHANNELS } from '../worker/channels'
import { type DevConnection, seedDevConnections } from './dev-connections'
import { type DevVars, loadDevVars } from './dev-vars'
import { originRestartCommand } from './origin-restart'
import { redact } from './redact'
import {
  DEV_VARIABLES,
  ORIGIN_PORT,
  readPort,
  routeDevSettings,
  UPSTASH_PORT,
  WORKER_PORT,
} from './settings'
import { REPO_ROOT, type Stack, type StackPiece, StackStartError, startStack } from './stack'
import { readWranglerConfig } from './wrangler-config'

const say = (line = '') => process.stdout.write(`${line}\n`)
const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)}s`

/** An empty value in the file means unset: the origin's own default applies. */
function withoutEmpty(values: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== ''))
}

/** Which port setting each piece listens on. */
const PORT_SETTINGS: Partial<Record<StackPiece, string>> = {
  redis: UPSTASH_PORT.name,
  origin: ORIGIN_PORT.name,
  worker: WORKER_PORT.name,
}

/** Turns "address in use" into something a person can act on. */
function explain(err: unknown): Error {
  if (!(err instanceof StackStartError)) return err as Error
  const cause = err.cause as NodeJS.ErrnoException
  const portName = PORT_SETTINGS[err.piece]
  if (cause.code === 'EADDRINUSE' && portName) {
    return new Error(
      `${err.piece}: port in use (another \`npm run dev\`?). Stop it, or set ${portName} to a free port.`,
    )
  }
  return err
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

  const controller = new AbortController()
  let starting: Promise<Stack> | undefined
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
    // Mid-start: the stack stops what has started and rejects.
    controller.abort()
    const stack = await starting?.catch(() => undefined)
    await stack?.stop().catch((err: Error) => say(`  stop failed: ${err.message}`))
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
    const pgliteDir = `${REPO_ROOT}/.data/pglite`
    say(
      values.DATABASE_URL
        ? `database: Postgres at ${redact(values.DATABASE_URL)} ...`
        : `database: embedded PGlite in ${relative(process.cwd(), pgliteDir) || '.'} (DATABASE_URL unset; first start initialises it, ~6 s) ...`,
    )
    const wrangler = await config
    const workerVars: Record<string, string> = { ...routed.worker }
    // [vars] from wrangler.toml stay as they are unless the environment overrides them.
    for (const name of Object.keys(wrangler.vars)) {
      const fromEnv = process.env[name]
      if (fromEnv) workerVars[name] = fromEnv
    }
    starting = startStack({
      postgres: values.DATABASE_URL ? { url: values.DATABASE_URL } : 'embedded',
      pgliteDir,
      redis: values.REDIS_URL ? { url: values.REDIS_URL } : 'embedded',
      upstashToken,
      originSecret: sharedSecret,
      ports,
      // Dev only: the origin's publisher writes the registry into wrangler dev's local KV.
      originEnv: {
        CONNECTIONS_LOCAL_KV_DIR: join(REPO_ROOT, '.wrangler', 'state', 'v3'),
        ...withoutEmpty(routed.origin),
      },
      // The Gmail poller claims in the same Redis as the Worker, through the same stand-in.
      originsUseRedis: true,
      onOriginLine: (line) => say(`[origin] ${line}`),
      worker: {
        runtime: 'dev',
        vars: workerVars,
        onLine: (line) => {
          if (line.trim()) say(`[worker] ${line}`)
        },
      },
      signal: controller.signal,
      onReady: (event) => {
        const t = seconds(startedAt)
        if (event.piece === 'database') {
          const applied = event.database.migrations.match(/^Applied: .*/gm) ?? []
          say(`  ready in ${t}; migrations: ${applied.length ? applied.length : 'up to date'}`)
        } else if (event.piece === 'redis') {
          say(
            `upstash: ${event.redis.url} in front of ${values.REDIS_URL ? redact(values.REDIS_URL) : 'the embedded in-memory store (REDIS_URL unset; lost on exit)'} (${t})`,
          )
        } else if (event.piece === 'origin') {
          say(`origin: ${event.origin.url} (${t})`)
        } else {
          say(`worker: ${event.worker.url} (${t})`)
        }
      },
    })
    const stack = await starting.catch((err) => {
      throw explain(err)
    })
    // `npm run failures` finds this database by itself while the stack runs.
    process.on('exit', writeDevStack(stack.originEnv))
    const seedingAt = performance.now()
    const seeded = await seedDevConnections(stack.originEnv).catch((err: Error) => ({
      skipped: `not seeded: ${err.message}`,
    }))
    if ('connections' in seeded) {
      say(`dev connections: ${seeded.connections.length}, published in ${seconds(seedingAt)}`)
    }
    printSummary(stack, devVars.source, startedAt, seeded)
    watch(stack, devVars, () => shuttingDown)
  } catch (err) {
    if (shuttingDown) return
    say(`\nnpm run dev failed: ${(err as Error).message}`)
    await shutdown('start-up failed', 1)
  }
}

function printSummary(
  s: Stack,
  devVars: string,
  startedAt: number,
  seeded: { connections: DevConnection[] } | { skipped: string },
): void {
  const db =
    s.database.mode === 'pglite'
      ? `${s.database.databaseUrl}  (embedded PGlite; psql works)`
      : redact(s.database.databaseUrl)
  say()
  say(`inbound-dedup dev stack is up (${seconds(startedAt)}; settings from ${devVars})`)
  say(`  worker    ${s.worker.url}     wrangler dev, its routes:`)
  for (const line of workerRoutes(s.worker.url)) say(`              ${line}`)
  if ('skipped' in seeded) say(`            dev connections: none (${seeded.skipped})`)
  else {
    say('            dev connections (docs/connections.md "Locally"), by route id:')
    for (const c of seeded.connections) {
      say(`              POST ${s.worker.url}/webhooks/${c.channel}/c/${c.id}  (${c.channel})`)
    }
  }
  say(`  origin    ${s.origin.url}     POST /v1/events, /healthz, /metrics (Bearer OPERATOR_TOKEN)`)
  say(`  console   ${s.origin.url}/console   sign in with OPERATOR_TOKEN (from ${devVars})`)
  say(`  upstash   ${s.redis.url}     Upstash REST stand-in (${s.redis.mode})`)
  say(`  neon ws   ${s.database.neonWsProxy}  Neon WebSocket proxy (NEON_WS_PROXY)`)
  say(`  postgres  ${db}`)
  say()
  say(`  try:  curl -s ${s.worker.url}/healthz`)
  say('        npx tsx local/send-webhook.ts --help   (signed vendor webhooks)')
  say('  Ctrl-C stops everything.')
  say()
}

/** Every route of the Worker, from the channel registry: a new channel shows up by itself. */
function workerRoutes(url: string): string[] {
  const webhooks = WEBHOOK_CHANNELS.flatMap((channel) =>
    channel.paths.map((path) => `POST ${url}/webhooks${path}  (${channel.name})`),
  )
  return [
    ...webhooks,
    `email() handler (Cloudflare Email Routing); locally: npx tsx local/send-webhook.ts email, or POST ${url}/cdn-cgi/handler/email?from=...&to=... with a raw message`,
    `GET ${url}/healthz, GET ${url}/healthz/deep (Authorization: Bearer OPERATOR_TOKEN)`,
  ]
}

/** When a child dies on its own, keep the rest running and say how to bring it back. */
function watch(stack: Stack, devVars: DevVars, shuttingDown: () => boolean): void {
  const { origin, worker } = stack
  const originExited = origin.exited
  originExited.then((exit) => {
    if (shuttingDown() || origin.exited !== originExited) return
    const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`
    say()
    say(`origin exited (${how}); the worker, database and Redis keep running.`)
    say('Restart it in another terminal with:')
    say(`  ${originRestartCommand(stack.originEnv, origin.port, devVars)}`)
    say()
  })
  if (worker.runtime !== 'dev') return
  worker.exited.then((exit) => {
    if (shuttingDown()) return
    const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`
    say()
    say(`wrangler dev exited (${how}); the origin, database and Redis keep running.`)
    say('Restart the whole stack (Ctrl-C, then `npm run dev`) to bring the worker back.')
    say()
  })
}

main().catch((err: Error) => {
  say(`npm run dev failed: ${err.message}`)
  process.exit(1)
})
