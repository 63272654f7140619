/**
 * One case of the matrix: its messages, the vendor delivery runs in flight, when its fault is in
 * effect, and the end of it: wait for every vendor to get its 2xx or give up, let the spool queue
 * settle, then check the invariant (ledger.ts).
 * @module
 */
import { delay } from '../../../local/processes'
import { type CliRun, runFailuresCli } from '../../support/origin'
import type { FaultStack } from './fault-stack'
import { type CaseResult, checkCase, rowsFor } from './ledger'
import {
  CHANNELS,
  type Channel,
  deliver,
  is2xx,
  type Message,
  MessageFactory,
  metaBatch,
  SIGNED_CHANNELS,
} from './vendors'

/**
 * The longest the spool may stay unchanged before a case stops waiting for it: a retry's longest
 * wait (SPOOL_SETTINGS, 2 s) plus a forward's timeout (ORIGIN_TIMEOUT_MS, 2 s), with room.
 */
const QUIET_MS = 6_000
/** The longest a case waits for the spool after its deliveries ended. */
const SETTLE_TIMEOUT_MS = 60_000

export interface SendOptions {
  /** Pause between starting one message's delivery and the next. @default 0 */
  gapMs?: number
  /** Independent deliveries of each message started at once (a vendor sending it again). @default 1 */
  copies?: number
}

/** A dead event's channel_failures row, as the dead-letter consumer recorded it. */
export interface DeadFailure {
  id: string
  status: string
  attempts: number
  error: string
}

export class FaultCase {
  readonly messages: Message[] = []
  /** Dead messages replayed from channel_failures, by marker: their rows just before. */
  private readonly replays = new Map<string, { rowsBefore: number }>()
  private readonly factory: MessageFactory
  private readonly runs: Array<Promise<void>> = []
  private faults = 0
  private readonly startedAt = Date.now()

  constructor(
    private readonly stack: FaultStack,
    readonly name: string,
    caseNo: number,
    run: string,
  ) {
    this.factory = new MessageFactory(run, caseNo)
  }

  /** `count` new logical messages, over `channels` in turn. */
  fresh(count: number, channels: readonly Channel[] = CHANNELS): Message[] {
    const made = Array.from({ length: count }, (_, i) =>
      this.factory.create(channels[i % channels.length] as Channel),
    )
    this.messages.push(...made)
    return made
  }

  /**
   * A WhatsApp Cloud batch: `count` new messages in one POST over two phone numbers, delivered
   * (and retried by Meta) as one; send it with {@link sendBatch}.
   */
  freshBatch(count: number, options: { forged?: boolean } = {}): Message[] {
    const made = metaBatch(this.factory, count, options.forged)
    this.messages.push(...made)
    return made
  }

  /** Starts Meta's delivery run of each batch (its first message's request is the whole POST). */
  async sendBatch(batches: readonly Message[][], options: SendOptions = {}): Promise<void> {
    await this.send(
      batches.map((batch) => batch[0] as Message),
      options,
    )
  }

  /** One delivery per signed channel, signed with the wrong secret. */
  forged(): Message[] {
    const made = SIGNED_CHANNELS.map((channel) => this.factory.create(channel, { forged: true }))
    this.messages.push(...made)
    return made
  }

  /**
   * Starts a vendor delivery run (first attempt plus the vendor's retries) for each message,
   * `gapMs` apart; resolves once all have started, not finished.
   */
  async send(messages: readonly Message[], options: SendOptions = {}): Promise<void> {
    for (const [i, message] of messages.entries()) {
      if (i > 0 && options.gapMs) await delay(options.gapMs)
      for (let copy = 0; copy < (options.copies ?? 1); copy++) {
        this.runs.push(deliver(message, this.stack.worker.url, () => this.faults > 0))
      }
    }
  }

  /** Runs `fault` (which breaks something), marking deliveries made meanwhile as in the fault. */
  async during<T>(fault: () => Promise<T>): Promise<T> {
    this.faults++
    try {
      return await fault()
    } finally {
      this.faults--
    }
  }

  /** Waits until every delivery run has ended (a 2xx, or its vendor gave up). */
  async settle(): Promise<void> {
    for (let done = 0; done < this.runs.length; done = this.runs.length) {
      await Promise.all(this.runs.slice(done))
    }
  }

  /**
   * Settles, waits for the spool queue to settle (below), then checks the invariant.
   *
   * A Worker cannot read its queue's backlog, so "settled" is read from two records: Postgres
   * (every message answered 2xx has its row) and the Worker's log lines (every event it queued
   * has been taken off the queue: delivered, refused or dead-lettered; a retry still pending could
   * yet write a second row). Or nothing changed in either for {@link QUIET_MS}; at most
   * {@link SETTLE_TIMEOUT_MS}. What is still queued then is reported as a problem.
   */
  async finish(): Promise<CaseResult> {
    await this.settle()
    const backlog = await this.waitForQueue()
    const seconds = (Date.now() - this.startedAt) / 1000
    const result = await checkCase(
      this.stack.sql,
      this.name,
      this.factory.markerPattern,
      this.messages,
      { tally: (m) => this.stack.worker.spool(m.needle), replays: this.replays },
      seconds,
    )
    if (backlog > 0) {
      result.problems.push(`the spool queue still held ${backlog} of this case's events at the end`)
    }
    for (const [i, origin] of this.stack.origins.entries()) {
      if (origin.crashed) {
        result.problems.push(`origin ${i} died by itself; its last output:\n${origin.output(15)}`)
      }
    }
    return result
  }

  /** Polls `check` every 300 ms until it holds (true) or `timeoutMs` has passed (false). */
  async until(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (await check()) return true
      if (Date.now() > deadline) return false
      await delay(300)
    }
  }

  /** Rows of `message` (found by its marker, like the ledger does). */
  async rowsOf(message: Message): Promise<number> {
    return (await rowsFor(this.stack.sql, `${message.marker} %`)).length
  }

  /** Every one of `messages` has a row. */
  async landed(messages: readonly Message[]): Promise<boolean> {
    const landed = await this.landedMarkers()
    return messages.every((m) => landed.has(m.marker))
  }

  /** The channel_failures row the dead-letter consumer recorded for `message`, if any. */
  async deadFailure(message: Message): Promise<DeadFailure | undefined> {
    const { rows } = await this.stack.sql.query<DeadFailure>(
      `SELECT id::text, status, attempts, error FROM channel_failures
        WHERE stage = 'inbound' AND source = 'queue'
          AND right(delivery_key, length($1)) = $1`,
      [message.needle],
    )
    return rows[0]
  }

  /**
   * The operator's replay of a dead message: `npm run failures -- replay <id>`. Its rows just
   * before are kept for the ledger, which counts it as landed only through this replay.
   */
  async replay(message: Message, failure: DeadFailure): Promise<CliRun> {
    this.replays.set(message.marker, { rowsBefore: await this.rowsOf(message) })
    const { database } = this.stack
    return runFailuresCli(
      { databaseUrl: database.databaseUrl, wsProxy: database.neonWsProxy },
      ['replay', failure.id],
      { DOWNSTREAM_URL: '' },
    )
  }

  /** Polls until the queue has settled (see {@link finish}); returns what is still queued. */
  private async waitForQueue(): Promise<number> {
    const deadline = Date.now() + SETTLE_TIMEOUT_MS
    const accepted = this.messages.filter(
      (m) => !m.forged && m.attempts.some((a) => is2xx(a.outcome)),
    )
    let last = ''
    let changedAt = Date.now()
    for (;;) {
      const landed = await this.landedMarkers()
      const backlog = this.messages.reduce((sum, m) => sum + this.queuedNow(m), 0)
      const missing = accepted.filter((m) => !landed.has(m.marker)).length
      if (missing === 0 && backlog === 0) return 0
      const state = `${landed.size} ${backlog}`
      if (state !== last) {
        last = state
        changedAt = Date.now()
      }
      if (Date.now() - changedAt > QUIET_MS || Date.now() > deadline) return backlog
      await delay(300)
    }
  }

  /** Markers of this case's messages that have a row. */
  private async landedMarkers(): Promise<Set<string>> {
    const rows = await rowsFor(this.stack.sql, this.factory.markerPattern)
    return new Set(rows.map((r) => r.body.split(' ')[0] ?? ''))
  }

  /** Events of `message` on the spool queue now: queued, not yet taken off it. */
  private queuedNow(message: Message): number {
    const tally = this.stack.worker.spool(message.needle)
    return Math.max(0, tally.queued - tally.ended)
  }

  /** The Worker's log lines about a message (by its marker's delivery key parts), for reports. */
  logsFor(message: Message): string[] {
    return this.stack.worker.logs(message.needle)
  }
}
