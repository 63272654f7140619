/**
 * One case of the matrix: its messages, the vendor delivery runs in flight, when its fault is in
 * effect, and the end of it: wait for every vendor to get its 2xx or give up, let the cron drain
 * the spool, then check the invariant (ledger.ts).
 * @module
 */
import { delay } from '../../../local/processes'
import type { FaultStack } from './fault-stack'
import { type CaseResult, checkCase, rowsFor } from './ledger'
import {
  CHANNELS,
  type Channel,
  deliver,
  type Message,
  MessageFactory,
  SIGNED_CHANNELS,
} from './vendors'

export interface SendOptions {
  /** Pause between starting one message's delivery and the next. @default 0 */
  gapMs?: number
  /** Independent deliveries of each message started at once (a vendor sending it again). @default 1 */
  copies?: number
}

export class FaultCase {
  readonly messages: Message[] = []
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
   * Settles, drains the spool with cron runs until every message has its row or nothing changes
   * for a few runs, then checks the invariant.
   */
  async finish(): Promise<CaseResult> {
    await this.settle()
    const wanted = new Set(this.messages.filter((m) => !m.forged).map((m) => m.marker))
    let last = -1
    for (let run = 0, unchanged = 0; run < 40 && unchanged < 3; run++) {
      await this.stack.cron.tick()
      const present = new Set(
        (await rowsFor(this.stack.sql, this.factory.markerPattern)).map(
          (r) => r.body.split(' ')[0],
        ),
      )
      const found = [...wanted].filter((marker) => present.has(marker)).length
      if (found === wanted.size) {
        // One more run: a drain that would write a second row has its chance to.
        await this.stack.cron.tick()
        break
      }
      unchanged = found === last ? unchanged + 1 : 0
      last = found
      await delay(300)
    }
    const seconds = (Date.now() - this.startedAt) / 1000
    const result = await checkCase(
      this.stack.sql,
      this.name,
      this.factory.markerPattern,
      this.messages,
      seconds,
    )
    for (const [i, origin] of this.stack.origins.entries()) {
      if (origin.crashed) {
        result.problems.push(`origin ${i} died by itself; its last output:\n${origin.output(15)}`)
      }
    }
    return result
  }

  /** The Worker's log lines about a message (by its marker's delivery key parts), for reports. */
  logsFor(message: Message): string[] {
    return this.stack.worker.logs(message.needle)
  }
}
