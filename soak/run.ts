/**
 * `npm run soak`: the nemesis soak (issue 11). The fault suite's stack (Worker bundle in
 * Miniflare with its queues, two origin pods behind a balancer, Upstash stand-in on a private
 * redis-server, Neon proxy on a private Postgres), plus a Gmail pod polling the fake Gmail API;
 * the generator's open-loop load and the nemesis's overlapping faults, both drawn from one seed;
 * then heal, let the vendors finish, let the spool queue settle, replay what died in
 * channel_failures, and check every message against Postgres.
 *
 * Settings (environment):
 * - `SOAK_SEED`: the seed (any string); unset, a random one, printed. Same seed, same schedule.
 * - `SOAK_RATE`: events a second (default 100, at most 1000).
 * - `SOAK_DURATION_S`: seconds of load (default 60, at most 3600); the faults heal before its end.
 * - `SOAK_SPOOL_CHANNELS`: the Worker's SPOOL_CHANNELS (`none` switches the spool off: the run
 *   must then fail, Twilio losing what it sends during origin outages).
 * - `SOAK_QUEUE_FIRST_CHANNELS`: the Worker's QUEUE_FIRST_CHANNELS (`all`: every event queued
 *   before any forward, the consumer storing them in batches).
 * - `SOAK_GMAIL`: `0` leaves Gmail out.
 * - `SOAK_HISTORY`: the history file (default `.data/soak/history-<seed>.jsonl`).
 *
 * Exit code 0 when nothing is lost, doubled or leaked (and, with the spool on for Twilio, no
 * Twilio message was answered 5xx and never 2xx); 1 otherwise, the seed on the last line.
 * @module
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { OriginHandle } from '../local/origin-process'
import { delay } from '../local/processes'
import { runId } from '../local/services'
import { REPO_ROOT } from '../local/stack'
import { type FaultStack, startFaultStack } from '../test/faults/support/fault-stack'
import { type FakeGmail, startFakeGmail } from '../test/support/fake-gmail'
import { runFailuresCli } from '../test/support/origin'
import { type CheckResult, check, judge, refusedTwilio, rowsOf } from './checker'
import { Load, planEvents } from './generator'
import { History } from './history'
import { MAILBOX, MessageMaker, SOAK_CHANNELS, type SoakMessage } from './messages'
import { Nemesis, planFaults } from './nemesis'
import { formatTable, lastLine, type SoakSummary } from './report'
import { Rng, randomSeed } from './rng'
import { WorkerLog } from './worker-log'

export interface SoakSettings {
  seed: string
  rate: number
  durationS: number
  gmail: boolean
  /** The Worker's SPOOL_CHANNELS; undefined: its default (every channel). */
  spoolChannels?: string
  /** The Worker's QUEUE_FIRST_CHANNELS; undefined: its default (none). */
  queueFirstChannels?: string
  historyPath: string
}

/** Reads the SOAK_* settings, bounded: the load is a count and a time, never open-ended. */
export function settingsFromEnv(env: NodeJS.ProcessEnv = process.env): SoakSettings {
  const seed = env.SOAK_SEED?.trim() || randomSeed()
  const number = (name: string, fallback: number, min: number, max: number) => {
    const raw = env[name]
    const value = raw === undefined || raw === '' ? fallback : Number(raw)
    if (!Number.isFinite(value) || value < min || value > max) {
      throw new Error(`${name} must be a number from ${min} to ${max}, not "${raw}"`)
    }
    return value
  }
  return {
    seed,
    rate: number('SOAK_RATE', 100, 1, 1_000),
    durationS: number('SOAK_DURATION_S', 60, 10, 3_600),
    gmail: env.SOAK_GMAIL !== '0',
    ...(env.SOAK_SPOOL_CHANNELS !== undefined ? { spoolChannels: env.SOAK_SPOOL_CHANNELS } : {}),
    ...(env.SOAK_QUEUE_FIRST_CHANNELS !== undefined
      ? { queueFirstChannels: env.SOAK_QUEUE_FIRST_CHANNELS }
      : {}),
    historyPath: env.SOAK_HISTORY || join(REPO_ROOT, '.data', 'soak', `history-${seed}.jsonl`),
  }
}

export interface SoakStack {
  faults: FaultStack
  gmail: FakeGmail
  /** An origin process polling the fake Gmail mailbox (not behind the balancer). */
  gmailPod: OriginHandle
  spoolChannels?: string
  stop(): Promise<void>
}

/** The fault suite's stack with the Worker's SPOOL_CHANNELS (and QUEUE_FIRST_CHANNELS) as given, and a Gmail pod. */
export async function startSoakStack(
  options: { spoolChannels?: string; queueFirstChannels?: string } = {},
): Promise<SoakStack> {
  const faults = await startFaultStack(options)
  let gmail: FakeGmail | undefined
  try {
    gmail = await startFakeGmail({ mailbox: MAILBOX })
    // Stopped with the stack, before the fake Gmail it polls.
    const gmailPod = await faults.stack.startOrigin({
      name: 'origin-gmail',
      env: { ...gmail.env, GMAIL_POLL_INTERVAL_MS: '500' },
    })
    const fake = gmail
    return {
      faults,
      gmail: fake,
      gmailPod,
      ...(options.spoolChannels !== undefined ? { spoolChannels: options.spoolChannels } : {}),
      async stop() {
        await gmailPod.stop().catch(() => {})
        await fake.close().catch(() => {})
        await faults.stop()
      },
    }
  } catch (err) {
    await gmail?.close().catch(() => {})
    await faults.stop()
    throw err
  }
}

export interface SoakOutcome {
  summary: SoakSummary
  table: string
  lastLine: string
  /** Why the run fails, if it does (lost, doubled, leaked, Twilio 5xx with the spool up). */
  failures: string[]
  /** Lost, doubled and leaked messages, and faults that could not be injected or healed. */
  problems: string[]
  historyPath: string
}

/** Quiet this long (nothing landed, nothing left the queue) and the settling stops waiting. */
const QUIET_MS = 10_000
/** The Gmail poller's lease (60 s) and a poll after it. */
const GMAIL_QUIET_MS = 75_000
const SETTLE_TIMEOUT_MS = 300_000
/** The nemesis starts after the load has, and heals this long before it ends. */
const WARMUP_MS = 2_000
const HEAL_MARGIN_MS = 3_000

/** One soak run on a started stack. */
export async function soak(stack: SoakStack, settings: SoakSettings): Promise<SoakOutcome> {
  const rng = new Rng(settings.seed)
  const durationMs = settings.durationS * 1_000
  const channels = SOAK_CHANNELS.filter((c) => settings.gmail || c !== 'gmail')
  const events = planEvents(rng.stream('events'), { rate: settings.rate, durationMs, channels })
  const faultPlan = planFaults(rng.stream('faults'), {
    warmupMs: WARMUP_MS,
    healByMs: durationMs - HEAL_MARGIN_MS,
  })
  const history = new History(settings.historyPath)
  const maker = new MessageMaker(runId().slice(-6))
  history.write({
    type: 'note',
    what: 'settings',
    ...settings,
    run: maker.run,
    events: events.length,
    faults: faultPlan.length,
  })
  const nemesis = new Nemesis(stack.faults, history)
  const load = new Load(maker, {
    workerUrl: stack.faults.worker.url,
    gmail: settings.gmail ? stack.gmail : null,
    history,
    faults: () => nemesis.faults(),
  })
  const workerLog = new WorkerLog(stack.faults.worker)
  const probe = new WorkerProbe(stack.faults.worker.url, history)
  try {
    await Promise.all([
      load.run(events, probe.signal),
      nemesis.run(faultPlan, probe.signal).finally(() => nemesis.healAll()),
    ])
    probe.stop()
    if (probe.signal.aborted) throw probe.signal.reason
    history.write({ type: 'note', what: 'load and faults over; settling' })
    await settle(stack, maker, load.messages, history, workerLog)
    // Replaying can land what a late dead letter was waiting for; a few rounds at most.
    const replayed = new Map<string, number>()
    for (let round = 0; round < 3; round++) {
      const more = await replayDead(stack, maker, history)
      if (more.size === 0) break
      for (const [marker, n] of more) replayed.set(marker, (replayed.get(marker) ?? 0) + n)
      await settle(stack, maker, load.messages, history, workerLog)
    }
    const result = await check(
      stack.faults.sql,
      maker.markerPattern,
      load.messages,
      workerLog.ignoredDeletes(load.messages),
    )
    const summary: SoakSummary = {
      seed: settings.seed,
      events: events.length,
      faults: nemesis.done,
      result,
      replayed,
    }
    const outcome: SoakOutcome = {
      summary,
      table: formatTable(summary),
      lastLine: lastLine(summary),
      failures: failuresOf(result, stack.spoolChannels),
      problems: [
        ...result.verdicts.flatMap((v) => (v.problem ? [v.problem] : [])),
        ...nemesis.done.flatMap((f) => (f.error ? [`fault ${f.n} ${f.kind}: ${f.error}`] : [])),
      ],
      historyPath: settings.historyPath,
    }
    for (const problem of outcome.problems)
      history.write({ type: 'note', what: 'problem', problem })
    // The Worker's own account of each message that went wrong: claims, forwards, the queue.
    for (const verdict of result.verdicts.filter((v) => v.problem || refusedTwilio(v.message))) {
      const lines = workerLog.linesOf(verdict.message)
      history.write({ type: 'note', what: 'worker log', marker: verdict.message.marker, lines })
    }
    if (result.verdicts.some((v) => v.lost && v.message.channel === 'gmail')) {
      history.write({ type: 'note', what: 'gmail pod output', lines: stack.gmailPod.output(40) })
    }
    history.write({ type: 'note', what: 'result', line: outcome.lastLine })
    return outcome
  } finally {
    probe.stop()
    workerLog.stop()
    await nemesis.healAll().catch(() => {})
    await history.close()
  }
}

/** The Worker runtime itself stopped listening: the run says nothing about the gateway then. */
export class WorkerGoneError extends Error {
  readonly code = 'soak_worker_gone'
}

/**
 * Asks the Worker's /healthz every 2 s during the load. The Worker is never one of the faults
 * (a local queue does not survive its restart), so connections refused three times running mean
 * its runtime (workerd) has died: `signal` aborts, the load and the nemesis stop starting things,
 * and the run ends with {@link WorkerGoneError} instead of thousands of refused deliveries read
 * as lost.
 */
class WorkerProbe {
  private readonly controller = new AbortController()
  private readonly timer: NodeJS.Timeout
  private refused = 0

  constructor(
    private readonly url: string,
    private readonly history: History,
  ) {
    this.timer = setInterval(() => void this.check(), 2_000)
  }

  get signal(): AbortSignal {
    return this.controller.signal
  }

  private async check(): Promise<void> {
    try {
      const response = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(5_000) })
      await response.arrayBuffer()
      this.refused = 0
    } catch (err) {
      const code = (err as { cause?: { code?: string } }).cause?.code
      this.refused = code === 'ECONNREFUSED' ? this.refused + 1 : 0
      if (this.refused < 3 || this.signal.aborted) return
      const message = `the Worker runtime (workerd) stopped listening at t=${this.history.now()} ms: its connections are refused; this run says nothing about the gateway`
      this.history.write({ type: 'note', what: 'worker gone', message })
      this.controller.abort(new WorkerGoneError(message))
      this.stop()
    }
  }

  stop(): void {
    clearInterval(this.timer)
  }
}

function failuresOf(result: CheckResult, spoolChannels: string | undefined): string[] {
  const failures: string[] = []
  if (result.lost > 0) failures.push(`${result.lost} messages lost`)
  if (result.doubled > 0) failures.push(`${result.doubled} rows doubled`)
  if (result.leaked > 0) failures.push(`${result.leaked} forged deliveries accepted or stored`)
  const twilioSpooled =
    spoolChannels === undefined || ['whatsapp', 'sms'].every((c) => spoolChannels.includes(c))
  if (twilioSpooled && result.twilio5xx > 0) {
    failures.push(`${result.twilio5xx} Twilio messages answered 5xx (never 2xx) with the queue up`)
  }
  return failures
}

/**
 * Waits until the spool queue has settled: every event the Worker queued has left the queue
 * (delivered, refused for good, or dead-lettered and recorded), read from its log lines, since a
 * Worker cannot read its queue's backlog; and every message is as the checker wants it. With the
 * queue empty, it stops once nothing changed for {@link QUIET_MS} ({@link GMAIL_QUIET_MS} while
 * Gmail messages are missing: a poll cut off by a fault may hold the mailbox's lease until it
 * runs out); at most {@link SETTLE_TIMEOUT_MS}, queue or not.
 */
async function settle(
  stack: SoakStack,
  maker: MessageMaker,
  messages: readonly SoakMessage[],
  history: History,
  workerLog: WorkerLog,
): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS
  let last = ''
  let changedAt = Date.now()
  for (;;) {
    const spool = stack.faults.worker.spool('')
    const backlog =
      Math.max(0, spool.queued - spool.ended) + Math.max(0, spool.dead - spool.recorded)
    const rows = await rowsOf(stack.faults.sql, maker.markerPattern).catch(() => null)
    const verdict = rows ? judge(messages, rows, workerLog.ignoredDeletes(messages)) : null
    const state = `${backlog} ${rows?.length} ${verdict?.lost} ${verdict?.doubled}`
    if (state !== last) {
      last = state
      changedAt = Date.now()
      history.write({ type: 'note', what: 'settling', backlog, rows: rows?.length, ...spool })
    }
    if (backlog === 0 && verdict && verdict.lost === 0) return
    const gmailMissing = verdict?.verdicts.some((v) => v.lost && v.message.channel === 'gmail')
    const quiet = Date.now() - changedAt > (gmailMissing ? GMAIL_QUIET_MS : QUIET_MS)
    if ((backlog === 0 && quiet) || Date.now() > deadline) {
      history.write({ type: 'note', what: 'settling stopped', backlog, lost: verdict?.lost })
      return
    }
    await delay(500)
  }
}

/**
 * Dead events of this run (the spool gave up on them while their poison lasted) replayed with
 * `npm run failures -- replay --all-dead`, as an operator would after the cause is fixed.
 * Returns, by marker, how many of its dead rows the replay resolved.
 */
async function replayDead(
  stack: SoakStack,
  maker: MessageMaker,
  history: History,
): Promise<Map<string, number>> {
  const deadOf = async () =>
    (
      await stack.faults.sql.query<{ id: string; body: string }>(
        `SELECT id, event->>'body' AS body FROM channel_failures
          WHERE stage = 'inbound' AND status = 'dead' AND event->>'body' LIKE $1`,
        [maker.markerPattern],
      )
    ).rows
  const dead = await deadOf()
  const replayed = new Map<string, number>()
  if (dead.length === 0) return replayed
  const { database } = stack.faults
  const cli = await runFailuresCli(
    { databaseUrl: database.databaseUrl, wsProxy: database.neonWsProxy },
    ['replay', '--all-dead'],
  )
  history.write({
    type: 'note',
    what: 'replay --all-dead',
    dead: dead.length,
    exit: cli.code,
    out: cli.stdout.trim().split('\n').slice(-3),
  })
  const still = new Set((await deadOf()).map((row) => row.id))
  for (const row of dead) {
    if (still.has(row.id)) continue
    const marker = row.body.split(' ', 1)[0] ?? ''
    replayed.set(marker, (replayed.get(marker) ?? 0) + 1)
  }
  return replayed
}

/** Prints what a run found; the last line is the summary line. */
export function printOutcome(outcome: SoakOutcome, write = console.log): void {
  write(`\n${outcome.table}\n`)
  for (const problem of outcome.problems.slice(0, 30)) write(`- ${problem}`)
  if (outcome.problems.length > 30) write(`- ... ${outcome.problems.length - 30} more`)
  write(`history: ${outcome.historyPath}`)
  if (outcome.failures.length > 0) {
    write(`FAILED: ${outcome.failures.join(', ')}; rerun with SOAK_SEED=${outcome.summary.seed}`)
  }
  write(outcome.lastLine)
}

async function main(): Promise<number> {
  const settings = settingsFromEnv()
  console.log(
    `soak: seed ${settings.seed}, ${settings.rate} events/s for ${settings.durationS} s, spool ${settings.spoolChannels ?? 'every channel'}${settings.queueFirstChannels ? `, queued first: ${settings.queueFirstChannels}` : ''}${settings.gmail ? '' : ', no Gmail'}`,
  )
  const { spoolChannels, queueFirstChannels } = settings
  const stack = await startSoakStack({
    ...(spoolChannels !== undefined ? { spoolChannels } : {}),
    ...(queueFirstChannels !== undefined ? { queueFirstChannels } : {}),
  })
  try {
    const outcome = await soak(stack, settings)
    printOutcome(outcome)
    return outcome.failures.length === 0 ? 0 : 1
  } finally {
    await stack.stop()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      console.error(err)
      process.exit(2)
    },
  )
}
