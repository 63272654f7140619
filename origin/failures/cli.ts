/**
 * `npm run failures -- <command>`: the operator's view of what failed after it was accepted:
 * downstream hand-offs (stage `downstream`) and inbound events that could not be stored (stage
 * `inbound`: the spool queue's dead letters, Gmail messages that could not be fetched).
 *
 *   list [--status pending|dead|resolved] [--limit N]   the rows, oldest first
 *   replay <id>                                          replay one dead row
 *   replay --all-dead                                    the same for every dead row
 *
 * Reads DATABASE_URL, DATABASE_DRIVER, NEON_WS_PROXY and DB_* like the origin (origin/config.ts);
 * without DATABASE_URL, those of a running `npm run dev` (dev-stack.ts). A downstream replay also DOWNSTREAM_URL
 * (and DOWNSTREAM_TIMEOUT_MS, FAILURE_*); the replay of a Gmail inbound row the origin's GMAIL_*
 * settings (and the worker's UPSTASH_REDIS_REST_*, REDIS_KEY_PREFIX, when set), because it fetches
 * the message again (origin/gmail/replay.ts); with those set, an inbound replay that lands also
 * settles its claim to `done`. A downstream replay goes through the same statements
 * and the same `Idempotency-Key: outbox-{id}` as the relay's retries; an inbound replay through the
 * same ingest as a live delivery. Neither can double anything.
 *
 * Exit codes: 0 done; 1 a replay failed, a row was not replayable, or the database did not
 * answer; 2 usage or configuration error. The pieces: cli-args.ts (the commands), replay-service.ts
 * (the replays, as outcomes), cli-replay.ts (those outcomes as lines and exit codes), cli-output.ts
 * (the table, the exit codes); this file reads the settings, opens the database and runs one
 * command.
 * @module
 */
import { pathToFileURL } from 'node:url'
import { claimStore, readClaimSettings } from '../../claims'
import { startupExit } from '../cli-kit'
import { ConfigError, type DatabaseSettings, type OriginEnv, readDatabaseSettings } from '../config'
import { type Database, openDatabase } from '../db'
import { DatabaseUnavailableError, describeError } from '../errors'
import { type GmailConfig, loadGmailConfig } from '../gmail/config'
import { silentLogger } from '../log'
import { type DownstreamConfig, readDownstream } from '../outbox/config'
import { type Command, parseArgs, USAGE } from './cli-args'
import { type CliIo, EXIT, failureTable } from './cli-output'
import { replayAllDeadCommand, replayOneCommand } from './cli-replay'
import { DEV_STACK_FILE, readDevStack } from './dev-stack'
import { type RetryPolicy, readRetryPolicy } from './policy'
import type { ReplayServiceDeps } from './replay-service'
import { listFailures } from './store'
import { gatewayReplayOf } from './unrecognized'

/** One command at a time: a list, or replays one after another. */
const CLI_POOL_MAX = 2

interface CliConfig {
  database: DatabaseSettings
  downstream: DownstreamConfig | null
  retry: RetryPolicy
  /** Null without the GMAIL_* settings: Gmail inbound rows cannot be fetched again. */
  gmail: GmailConfig | null
}

export function loadCliConfig(env: OriginEnv): CliConfig {
  const problems: string[] = []
  const config: CliConfig = {
    database: readDatabaseSettings(env, problems),
    downstream: readDownstream(env, problems),
    retry: readRetryPolicy(env, problems),
    gmail: readGmail(env, problems),
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return config
}

function readGmail(env: OriginEnv, problems: string[]): GmailConfig | null {
  try {
    return loadGmailConfig(env)
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    problems.push(...err.problems)
    return null
  }
}

export async function runCli(
  args: readonly string[],
  given: OriginEnv,
  io: CliIo,
): Promise<number> {
  let command: Command
  let config: CliConfig
  let env = given
  try {
    command = parseArgs(args)
    if (command.name === 'help') {
      io.out(USAGE)
      return EXIT.ok
    }
    env = withDevStack(given, io)
    config = loadCliConfig(env)
  } catch (err) {
    return startupExit(err, io, USAGE)
  }
  const db = openDatabase(config.database, CLI_POOL_MAX, silentLogger)
  try {
    if (command.name === 'list') return await list(db, command, io)
    const deps: ReplayServiceDeps = {
      db,
      downstream: config.downstream,
      retry: config.retry,
      gmail: config.gmail,
      env,
      claims: claimStore(readClaimSettings(env, [])),
      gateway: gatewayReplayOf(env),
    }
    if (command.name === 'replay') return await replayOneCommand(deps, command.id, io)
    return await replayAllDeadCommand(deps, io)
  } catch (err) {
    if (err instanceof DatabaseUnavailableError) {
      const hint = config.database.neonWsProxy
        ? ''
        : ' (NEON_WS_PROXY is unset: the driver went to Neon itself; locally, set it to the proxy)'
      io.err(`database unavailable: ${describeError(err.cause).message ?? 'no answer'}${hint}`)
      return EXIT.failed
    }
    throw err
  } finally {
    await db.close()
  }
}

/** Without DATABASE_URL, the database of a running `npm run dev` (dev-stack.ts), said on stderr. */
function withDevStack(env: OriginEnv, io: CliIo): OriginEnv {
  if (env.DATABASE_URL) return env
  const dev = readDevStack()
  if (!dev) return env
  io.err(`DATABASE_URL is unset: using the database of the running npm run dev (${DEV_STACK_FILE})`)
  return { ...env, ...dev }
}

async function list(
  db: Database,
  command: Extract<Command, { name: 'list' }>,
  io: CliIo,
): Promise<number> {
  const rows = await listFailures(db, { status: command.status, limit: command.limit })
  const what = command.status ? `${command.status} failures` : 'failures'
  if (rows.length === 0) {
    io.out(`no ${what}`)
    return EXIT.ok
  }
  for (const line of failureTable(rows)) io.out(line)
  io.out(
    `${rows.length} ${what}${rows.length === command.limit ? ` (first ${command.limit}; --limit N for more)` : ''}`,
  )
  return EXIT.ok
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const io: CliIo = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  }
  runCli(process.argv.slice(2), process.env, io).then(
    (code) => process.exit(code),
    (err: unknown) => {
      io.err(`failures: ${describeError(err).message ?? 'unexpected error'}`)
      process.exit(EXIT.failed)
    },
  )
}
