/**
 * `npm run failures -- <command>`: the operator's view of what failed after it was accepted:
 * downstream hand-offs (stage `downstream`) and inbound events that could not be stored (stage
 * `inbound`: the spool queue's dead letters, Gmail messages that could not be fetched).
 *
 *   list [--status pending|dead|resolved] [--limit N]   the rows, oldest first
 *   replay <id>                                          replay one dead row
 *   replay --all-dead                                    the same for every dead row
 *
 * Reads DATABASE_URL and NEON_WS_PROXY like the origin; a downstream replay also DOWNSTREAM_URL
 * (and DOWNSTREAM_TIMEOUT_MS, FAILURE_*); the replay of a Gmail inbound row the origin's GMAIL_*
 * settings (and the worker's UPSTASH_REDIS_REST_*, REDIS_KEY_PREFIX, when set), because it fetches
 * the message again (origin/gmail/replay.ts). A downstream replay goes through the same statements
 * and the same `Idempotency-Key: outbox-{id}` as the relay's retries; an inbound replay through the
 * same ingest as a live delivery. Neither can double anything.
 *
 * Exit codes: 0 done; 1 a replay failed, a row was not replayable, or the database did not
 * answer; 2 usage or configuration error.
 * @module
 */
import { pathToFileURL } from 'node:url'
import { ConfigError, intSetting, isPostgresUrl, type OriginEnv } from '../config'
import { createDatabase, type Database } from '../db'
import { DatabaseUnavailableError, describeError } from '../errors'
import { type GmailConfig, loadGmailConfig } from '../gmail/config'
import { GmailHttpError } from '../gmail/http'
import { replayGmailFailure } from '../gmail/replay'
import { silentLogger } from '../log'
import { type DownstreamConfig, readDownstream } from '../outbox/config'
import { idempotencyKey } from '../outbox/downstream'
import {
  type DeadInboundFailure,
  getDeadInboundFailure,
  INBOUND_STAGE,
  replayInboundEvent,
} from './inbound'
import { type RetryPolicy, readRetryPolicy } from './policy'
import { type ReplayOutcome, replayClaimed } from './replay'
import {
  claimDeadFailure,
  deadFailureIds,
  FAILURE_STATUSES,
  type Failure,
  type FailureStatus,
  getFailure,
  listFailures,
} from './store'

export const EXIT = { ok: 0, failed: 1, usage: 2 } as const

const USAGE = `usage: npm run failures -- <command>
  list [--status pending|dead|resolved] [--limit N]
  replay <id>
  replay --all-dead`

/** A replay's claim lasts past the hand-off's bound; should this process die, it runs out. */
const REPLAY_LEASE_MARGIN_MS = 30_000
const LIST_DEFAULT_LIMIT = 100
const ALL_DEAD_MAX = 10_000
const ERROR_COLUMN_WIDTH = 60
const KEY_COLUMN_WIDTH = 48

export interface CliIo {
  out(line: string): void
  err(line: string): void
}

type Command =
  | { name: 'list'; status?: FailureStatus; limit: number }
  | { name: 'replay'; id: string }
  | { name: 'replay-all-dead' }

class UsageError extends Error {}

export function parseArgs(args: readonly string[]): Command {
  const [command, ...rest] = args
  if (command === 'list') {
    let status: FailureStatus | undefined
    let limit = LIST_DEFAULT_LIMIT
    for (let i = 0; i < rest.length; i++) {
      const flag = rest[i]
      const value = rest[i + 1]
      if (flag === '--status' && FAILURE_STATUSES.includes(value as FailureStatus)) {
        status = value as FailureStatus
      } else if (flag === '--limit' && /^\d{1,6}$/.test(value ?? '') && Number(value) > 0) {
        limit = Number(value)
      } else {
        throw new UsageError(`list: unexpected ${flag ?? ''} ${value ?? ''}`.trim())
      }
      i++
    }
    return { name: 'list', status, limit }
  }
  if (command === 'replay' && rest.length === 1) {
    if (rest[0] === '--all-dead') return { name: 'replay-all-dead' }
    if (/^\d{1,19}$/.test(rest[0] ?? '')) return { name: 'replay', id: rest[0] as string }
  }
  throw new UsageError(command ? `unknown or incomplete command: ${args.join(' ')}` : 'no command')
}

interface CliConfig {
  databaseUrl: string
  neonWsProxy: string | undefined
  queryTimeoutMs: number
  connectTimeoutMs: number
  downstream: DownstreamConfig | null
  retry: RetryPolicy
  /** Null without the GMAIL_* settings: Gmail inbound rows cannot be fetched again. */
  gmail: GmailConfig | null
}

export function loadCliConfig(env: OriginEnv): CliConfig {
  const problems: string[] = []
  const databaseUrl = env.DATABASE_URL?.trim() ?? ''
  if (!isPostgresUrl(databaseUrl)) {
    problems.push('DATABASE_URL must be the postgres:// connection string the origin uses')
  }
  const config: CliConfig = {
    databaseUrl,
    neonWsProxy: env.NEON_WS_PROXY?.trim() || undefined,
    queryTimeoutMs: intSetting(env, problems, 'DB_QUERY_TIMEOUT_MS', 5_000, 100, 600_000),
    connectTimeoutMs: intSetting(env, problems, 'DB_CONNECT_TIMEOUT_MS', 5_000, 100, 600_000),
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

export async function runCli(args: readonly string[], env: OriginEnv, io: CliIo): Promise<number> {
  let command: Command
  let config: CliConfig
  try {
    command = parseArgs(args)
    config = loadCliConfig(env)
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`${err.message}\n${USAGE}`)
      return EXIT.usage
    }
    if (err instanceof ConfigError) {
      for (const problem of err.problems) io.err(`configuration: ${problem}`)
      return EXIT.usage
    }
    throw err
  }
  const db = createDatabase({
    databaseUrl: config.databaseUrl,
    neonWsProxy: config.neonWsProxy,
    poolMax: 2,
    connectTimeoutMs: config.connectTimeoutMs,
    queryTimeoutMs: config.queryTimeoutMs,
    logger: silentLogger,
  })
  try {
    if (command.name === 'list') return await list(db, command, io)
    const deps = {
      db,
      downstream: config.downstream,
      retry: config.retry,
      gmail: config.gmail,
      env,
    }
    if (command.name === 'replay') return await replayOne(deps, command.id, io)
    return await replayAllDead(deps, io)
  } catch (err) {
    if (err instanceof DatabaseUnavailableError) {
      const hint = config.neonWsProxy
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
  const table = [
    [
      'id',
      'status',
      'stage',
      'attempts',
      'outbox',
      'message',
      'channel',
      'delivery key',
      'next attempt',
      'error',
    ],
    ...rows.map((f) => [
      f.id,
      f.status,
      f.source ? `${f.stage}/${f.source}` : f.stage,
      String(f.attempts),
      f.outboxId ?? '-',
      f.messageId ?? '-',
      f.channel,
      truncate(f.deliveryKey ?? '-', KEY_COLUMN_WIDTH),
      f.status === 'pending' ? f.nextAttemptAt : '-',
      truncate(f.error, ERROR_COLUMN_WIDTH),
    ]),
  ]
  const widths = (table[0] as string[]).map((_, i) =>
    Math.max(...table.map((r) => r[i]?.length ?? 0)),
  )
  for (const row of table)
    io.out(
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
  io.out(
    `${rows.length} ${what}${rows.length === command.limit ? ` (first ${command.limit}; --limit N for more)` : ''}`,
  )
  return EXIT.ok
}

interface ReplayCliDeps {
  db: Database
  /** Null without DOWNSTREAM_URL: inbound rows still replay, downstream rows do not. */
  downstream: DownstreamConfig | null
  retry: RetryPolicy
  /** Null without GMAIL_*: downstream and queue rows still replay, Gmail rows do not. */
  gmail: GmailConfig | null
  env: OriginEnv
}

const NO_DOWNSTREAM = 'DOWNSTREAM_URL is not set: a downstream replay hands outbox rows to it'
const NO_GMAIL =
  'GMAIL_CLIENT_ID, GMAIL_CLIENT_SECRET, GMAIL_REFRESH_TOKEN and GMAIL_MAILBOX are not set: a Gmail row is replayed by fetching the message again'

/** Why this process cannot replay `failure` at all (a configuration error), or null. */
function missingSettings(deps: ReplayCliDeps, failure: Failure): string | null {
  if (failure.stage === 'downstream' && !deps.downstream) return NO_DOWNSTREAM
  if (failure.stage === INBOUND_STAGE && failure.source === 'gmail' && !deps.gmail) return NO_GMAIL
  return null
}

async function replayOne(deps: ReplayCliDeps, id: string, io: CliIo): Promise<number> {
  const failure = await getFailure(deps.db, id)
  if (!failure) {
    io.err(`failure ${id}: no such row`)
    return EXIT.failed
  }
  const missing = missingSettings(deps, failure)
  if (missing) {
    io.err(`configuration: ${missing}`)
    return EXIT.usage
  }
  const refusal = notReplayable(failure, deps.retry)
  if (refusal) {
    const { line, exit } = refusal
    ;(exit === EXIT.ok ? io.out : io.err)(`failure ${id}: ${line}`)
    return exit
  }
  return (await replayDead(deps, failure, io)) ? EXIT.ok : EXIT.failed
}

async function replayAllDead(deps: ReplayCliDeps, io: CliIo): Promise<number> {
  const ids = await deadFailureIds(deps.db, ALL_DEAD_MAX)
  if (ids.length === 0) {
    io.out('no dead failures')
    return EXIT.ok
  }
  let resolved = 0
  for (const id of ids) {
    const failure = await getFailure(deps.db, id)
    const missing = failure && missingSettings(deps, failure)
    if (missing) {
      io.err(`failure ${id}: skipped; ${missing}`)
      continue
    }
    if (failure && (await replayDead(deps, failure, io))) resolved++
  }
  const failed = ids.length - resolved
  io.out(`replayed ${ids.length} dead failures: ${resolved} resolved, ${failed} still failing`)
  return failed === 0 ? EXIT.ok : EXIT.failed
}

function notReplayable(
  failure: Failure,
  retry: RetryPolicy,
): { line: string; exit: number } | null {
  if (failure.status === 'resolved')
    return { line: 'already resolved; nothing to replay', exit: EXIT.ok }
  if (failure.status === 'pending') {
    return {
      line:
        `pending: the relay retries it at ${failure.nextAttemptAt} (attempt ${failure.attempts + 1}` +
        ` of ${retry.maxAttempts}); only dead rows are replayed by hand`,
      exit: EXIT.failed,
    }
  }
  if (failure.stage === INBOUND_STAGE) return null
  if (failure.stage !== 'downstream' || failure.outboxId === null) {
    return { line: `stage ${failure.stage} is not replayed by this tool`, exit: EXIT.failed }
  }
  return null
}

/** Replays one dead row and prints one line. True when it is now stored / handed off. */
async function replayDead(deps: ReplayCliDeps, failure: Failure, io: CliIo): Promise<boolean> {
  if (failure.stage === INBOUND_STAGE) return replayInbound(deps, failure.id, io)
  const downstream = deps.downstream as DownstreamConfig
  const leaseMs = downstream.timeoutMs + REPLAY_LEASE_MARGIN_MS
  const claimed = await claimDeadFailure(deps.db, failure.id, leaseMs)
  if (!claimed) {
    io.err(`failure ${failure.id}: no longer dead (replayed or resolved meanwhile)`)
    return false
  }
  const outcome = await replayClaimed({ ...deps, downstream }, claimed)
  const line = describeOutcome(outcome, claimed.row.id)
  ;(isSuccess(outcome) ? io.out : io.err)(`failure ${failure.id}: ${line}`)
  return isSuccess(outcome)
}

/** An inbound event through the ingest path: one line naming the message it is now. */
async function replayInbound(deps: ReplayCliDeps, id: string, io: CliIo): Promise<boolean> {
  const failure = await getDeadInboundFailure(deps.db, id)
  if (!failure) {
    io.err(`failure ${id}: no longer dead (replayed or resolved meanwhile)`)
    return false
  }
  if (failure.source === 'gmail') return replayGmail(deps, failure, io)
  const replay = await replayInboundEvent(deps.db, failure)
  if (replay.outcome === 'not_replayable') {
    io.err(`failure ${id}: not replayable: ${replay.reason}`)
    return false
  }
  const { outcome, messageId } = replay.result
  const what = messageId ? `message ${messageId}` : 'no message'
  const by = replay.outcome === 'claim_lost' ? '; another replay resolved the row' : '; resolved'
  io.out(`failure ${id}: ${failure.deliveryKey} ingested (${outcome}, ${what})${by}`)
  return true
}

/** A Gmail row: the message fetched again and taken through the poller's path. */
async function replayGmail(
  deps: ReplayCliDeps,
  failure: DeadInboundFailure,
  io: CliIo,
): Promise<boolean> {
  const config = { db: deps.db, config: deps.gmail as GmailConfig, env: deps.env }
  const line = (text: string) => `failure ${failure.id}: ${text}`
  let replay: Awaited<ReturnType<typeof replayGmailFailure>>
  try {
    replay = await replayGmailFailure(config, failure)
  } catch (err) {
    // Gmail or OAuth unavailable: nothing was tried, nothing written; the row is as it was.
    if (!(err instanceof GmailHttpError)) throw err
    io.err(line(`Gmail unavailable (${err.message}); the row stays dead, try again later`))
    return false
  }
  switch (replay.outcome) {
    case 'not_replayable':
      io.err(line(`not replayable: ${replay.reason}`))
      return false
    case 'failed':
      io.err(line(`still failing: ${replay.error}; the row stays dead`))
      return false
    case 'skipped':
      io.err(
        line(
          `gmail message ${replay.gmailId} is labelled SENT, DRAFT, SPAM or TRASH now: not a customer message; the row stays dead`,
        ),
      )
      return false
    case 'resolved':
    case 'claim_lost': {
      const what = replay.messageId ? `message ${replay.messageId}` : 'no message'
      const by =
        replay.outcome === 'claim_lost' ? '; another replay resolved the row' : '; resolved'
      io.out(line(`gmail message ${replay.gmailId} ingested (${replay.ingested}, ${what})${by}`))
      return true
    }
  }
}

function isSuccess(outcome: ReplayOutcome): boolean {
  return (
    outcome.outcome === 'resolved' ||
    outcome.outcome === 'already_processed' ||
    (outcome.outcome === 'claim_lost' && outcome.handedOff)
  )
}

function describeOutcome(outcome: ReplayOutcome, outboxId: string): string {
  const key = idempotencyKey(outboxId)
  switch (outcome.outcome) {
    case 'resolved':
      return `outbox row ${outboxId} handed off (Idempotency-Key ${key}); resolved`
    case 'already_processed':
      return `outbox row ${outboxId} was processed meanwhile; resolved without a hand-off`
    case 'dead':
      return `hand-off failed again (${outcome.error}); dead after ${outcome.attempts} attempts`
    case 'retry_scheduled':
      return `hand-off failed again (${outcome.error}); pending, next attempt in ${Math.ceil(outcome.retryInMs / 1000)} s`
    case 'claim_lost':
      return outcome.handedOff
        ? `outbox row ${outboxId} handed off (Idempotency-Key ${key}); another process settled the row`
        : 'another process took the row over; nothing written'
  }
}

function truncate(text: string, width: number): string {
  const line = text.replace(/\s+/g, ' ')
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`
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
