/**
 * `npm run connections -- <command>` (cli-args.ts lists them): the registry from a shell, through
 * the same service as the admin API and the console (service.ts), audited as `cli (user@host)`.
 * Reads DATABASE_URL and the database settings like the origin (without it, those of a running
 * `npm run dev`), ORIGIN_KEKS, and for `publish` EDGE_KEKS and the CLOUDFLARE_* settings.
 * Prints views (fingerprints, never a secret), one line each, or JSON with `--output json`.
 * Exit codes: 0 done; 1 refused or failed (the line says why, naming the field); 2 usage or
 * configuration.
 * @module
 */
import { readFileSync } from 'node:fs'
import { hostname, userInfo } from 'node:os'
import { pathToFileURL } from 'node:url'
import { parseEnv } from 'node:util'
import { type CliIo as BaseIo, EXIT, startupExit, UsageError } from '../cli-kit'
import { ConfigError, type OriginEnv, readDatabaseSettings } from '../config'
import { openDatabase } from '../db'
import { DatabaseUnavailableError, describeError } from '../errors'
import { readDevStack } from '../failures/dev-stack'
import { silentLogger } from '../log'
import { type Command, type Flags, parseArgs, USAGE } from './cli-args'
import { bodyOf, createBody, generatedLines, rotateBody, updateBody, viewLine } from './cli-bodies'
import type { ConnectionServiceDeps } from './deps'
import { ConnectionError } from './errors'
import { importPlan } from './import'
import { restPublisher } from './kv-rest'
import { publishPending } from './publisher'
import { resyncAll } from './resync'
import { rewrapSecrets } from './rewrap'
import * as registry from './service'
import { loadRegistryConfig, type RegistryConfig } from './settings'

export interface CliIo extends BaseIo {
  /** The JSON of `--json -`. @default stdin */
  stdin?: () => string
}

export { EXIT }

const actor = () => {
  let user = 'unknown'
  try {
    user = userInfo().username
  } catch {}
  return `cli (${user}@${hostname()})`
}

export async function runCli(
  args: readonly string[],
  given: OriginEnv,
  io: CliIo,
): Promise<number> {
  let command: Command
  let env = given
  let settings: { registry: RegistryConfig; database: ReturnType<typeof readDatabaseSettings> }
  try {
    command = parseArgs(args)
    if (command.name === 'help') {
      io.out(USAGE)
      return EXIT.ok
    }
    if (!env.DATABASE_URL) env = { ...env, ...(readDevStack() ?? {}) }
    const problems: string[] = []
    const database = readDatabaseSettings(env, problems)
    if (problems.length > 0) throw new ConfigError(problems)
    settings = { registry: await loadRegistryConfig(env), database }
  } catch (err) {
    return startupExit(err, io, USAGE)
  }
  const db = openDatabase(settings.database, 2, silentLogger)
  const deps: ConnectionServiceDeps = { db, originKeys: settings.registry.originKeys }
  try {
    return await run(command, deps, settings.registry, env, io)
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(err.message)
      return EXIT.usage
    }
    if (err instanceof ConnectionError) {
      io.err(`refused (${err.code}): ${err.message}`)
      return EXIT.failed
    }
    if (err instanceof DatabaseUnavailableError) {
      io.err(`database unavailable: ${describeError(err.cause).message ?? 'no answer'}`)
      return EXIT.failed
    }
    throw err
  } finally {
    await db.close()
  }
}

async function run(
  command: Exclude<Command, { name: 'help' }>,
  deps: ConnectionServiceDeps,
  config: RegistryConfig,
  env: OriginEnv,
  io: CliIo,
): Promise<number> {
  const { flags } = command
  const print = (value: unknown, line: string) =>
    io.out(flags.output ? JSON.stringify(value) : line)
  const show = (v: registry.ConnectionView & { generated?: Record<string, string> }) =>
    print(v, viewLine(v) + generatedLines(v))
  switch (command.name) {
    case 'list': {
      const limit = flags.limit === undefined ? undefined : Number(flags.limit)
      const page = await registry.listConnections(deps, { ...flags, limit })
      if (flags.output) io.out(JSON.stringify(page))
      else for (const c of page.connections) io.out(viewLine(c))
      if (!flags.output && page.next) io.out(`more: --after ${page.next}`)
      return EXIT.ok
    }
    case 'show': {
      const detail = await registry.showConnection(deps, command.id)
      print(
        detail,
        [viewLine(detail), ...detail.audit.map((a) => `  ${a.at} ${a.action} by ${a.actor}`)].join(
          '\n',
        ),
      )
      return EXIT.ok
    }
    case 'create':
      show(await registry.createConnection(deps, bodyOf(flags, env, io, createBody), actor()))
      return EXIT.ok
    case 'update':
      show(
        await registry.updateConnection(
          deps,
          command.id,
          bodyOf(flags, env, io, updateBody),
          actor(),
        ),
      )
      return EXIT.ok
    case 'rotate':
      show(
        await registry.rotateConnection(
          deps,
          command.id,
          bodyOf(flags, env, io, rotateBody),
          actor(),
        ),
      )
      return EXIT.ok
    case 'disable':
      show(await registry.disableConnection(deps, command.id, actor()))
      return EXIT.ok
    case 'enable':
      show(await registry.enableConnection(deps, command.id, actor()))
      return EXIT.ok
    case 'delete':
      print(await registry.deleteConnection(deps, command.id, actor()), `deleted ${command.id}`)
      return EXIT.ok
    case 'import':
      return importCommand(deps, flags, env, io)
    case 'rewrap':
      print(
        { rewrapped: await rewrapSecrets(deps, actor()) },
        'every secret is under the current ORIGIN_KEKS key',
      )
      return EXIT.ok
    case 'resync':
      print({ queued: await resyncAll(deps, actor()) }, 'queued every connection for the edge')
      return EXIT.ok
    case 'publish': {
      if (!config.originKeys || !config.edgeKeys || !config.kv) {
        io.err(
          'publish needs ORIGIN_KEKS, EDGE_KEKS, CLOUDFLARE_ACCOUNT_ID, CLOUDFLARE_KV_NAMESPACE_ID and CLOUDFLARE_KV_API_TOKEN',
        )
        return EXIT.usage
      }
      const keys = { originKeys: config.originKeys, edgeKeys: config.edgeKeys }
      const pass = await publishPending({
        db: deps.db,
        ...keys,
        kv: restPublisher(config.kv),
        logger: silentLogger,
      })
      print(
        pass,
        pass.ran
          ? `published ${pass.connections} connections (${pass.rows} changes)`
          : 'another publisher is running a pass',
      )
      return EXIT.ok
    }
  }
}

async function importCommand(deps: ConnectionServiceDeps, flags: Flags, env: OriginEnv, io: CliIo) {
  const source = flags['env-file'] ? parseEnv(readFileSync(flags['env-file'], 'utf8')) : env
  const plan = importPlan(source)
  for (const warning of plan.warnings) io.err(`warning: ${warning}`)
  for (const r of plan.refused) io.out(`refused ${r.channel} ${r.account}: ${r.reason}`)
  if (flags['dry-run']) {
    for (const d of plan.drafts)
      io.out(`would import ${d.channel} ${d.account} (${d.ids.length} ids)`)
    return plan.refused.length > 0 ? EXIT.failed : EXIT.ok
  }
  const outcomes = await registry.importConnections(deps, plan.drafts, actor())
  for (const o of outcomes) {
    const line =
      o.status === 'refused'
        ? `refused ${o.channel} ${o.account}: ${o.reason}`
        : `${o.status} ${o.channel} ${o.account} ${o.id}`
    io.out(flags.output ? JSON.stringify(o) : line)
  }
  const refused = plan.refused.length + outcomes.filter((o) => o.status === 'refused').length
  return refused > 0 ? EXIT.failed : EXIT.ok
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const io: CliIo = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  }
  runCli(process.argv.slice(2), process.env, io).then(
    (code) => process.exit(code),
    (err: unknown) => {
      io.err(`connections: ${describeError(err).message ?? 'unexpected error'}`)
      process.exit(EXIT.failed)
    },
  )
}
