/**
 * The history of a soak run: one JSON object per line, in the order things happened, so that a
 * failed run can be read afterwards (`grep sk-<run>-m123 history.jsonl`, or `jq`):
 *
 * - `{"t":…, "type":"request", "event":n, "marker", "channel", "delivery", "attempt", "faults":[…]}`
 * - `{"t":…, "type":"answer", "event":n, "marker", "delivery", "attempt", "outcome"}`
 * - `{"t":…, "type":"fault", "phase":"start"|"end", "fault":n, "kind", "detail"}`
 * - `{"t":…, "type":"note", …}`: the run's settings, drain and replay steps, the verdicts.
 *
 * `t` is ms since the run started. Writes are buffered by the stream; {@link History.close}
 * flushes them.
 * @module
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs'
import { dirname } from 'node:path'

export type HistoryRecord = { type: string } & Record<string, unknown>

export class History {
  private readonly out: WriteStream
  private readonly startedAt = Date.now()
  private lines = 0

  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true })
    this.out = createWriteStream(path, { flags: 'w' })
  }

  /** Milliseconds since the run started. */
  now(): number {
    return Date.now() - this.startedAt
  }

  write(record: HistoryRecord): void {
    this.lines++
    this.out.write(`${JSON.stringify({ t: this.now(), ...record })}\n`)
  }

  get written(): number {
    return this.lines
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.out.end((err?: Error | null) => (err ? reject(err) : resolve()))
    })
  }
}
