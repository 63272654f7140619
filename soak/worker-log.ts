/**
 * The Worker's own account of each message: its JSON log lines (decisions, spool retries,
 * deliveries, dead letters), kept by message for the whole run. The fault stack keeps only the
 * latest lines, so they are read every few seconds and filed by the id their delivery key ends
 * with (`dedup:{namespace}:{scope}:{id}`).
 *
 * Two uses: the history shows, for each message that went wrong, what the Worker did with it; and
 * the checker learns which deletes the origin answered "ignored" (see checker.ts, overtaken).
 * @module
 */
import type { FaultWorker } from '../test/faults/support/fault-stack'
import type { SoakMessage } from './messages'

/** How often the lines are read: well inside the time the stack keeps them, under any load. */
const READ_EVERY_MS = 3_000

export class WorkerLog {
  /** Lines by delivery id; a Set, as consecutive reads see the same lines again. */
  private readonly byId = new Map<string, Set<string>>()
  private readonly timer: NodeJS.Timeout

  constructor(private readonly worker: Pick<FaultWorker, 'logs'>) {
    this.timer = setInterval(() => this.read(), READ_EVERY_MS)
  }

  /** Files every line the stack holds now. */
  read(): void {
    for (const line of this.worker.logs('"deliveryKey"')) {
      const id = deliveryIdOf(line)
      if (id === null) continue
      let lines = this.byId.get(id)
      if (!lines) {
        lines = new Set()
        this.byId.set(id, lines)
      }
      lines.add(line)
    }
  }

  /** The Worker's lines about `message`, in the order they were logged per delivery. */
  linesOf(message: SoakMessage): string[] {
    return [...message.deliveryIds].flatMap((id) => [...(this.byId.get(id.toLowerCase()) ?? [])])
  }

  /** Markers of the messages whose delete the origin answered "ignored". */
  ignoredDeletes(messages: readonly SoakMessage[]): Set<string> {
    this.read()
    const ignored = new Set<string>()
    for (const message of messages) {
      if (!message.deleteId) continue
      const lines = this.byId.get(message.deleteId.toLowerCase())
      if (lines && [...lines].some((line) => line.includes('"origin":"ignored"'))) {
        ignored.add(message.marker)
      }
    }
    return ignored
  }

  stop(): void {
    clearInterval(this.timer)
  }
}

/** The last part of a line's `deliveryKey`, angle brackets (email Message-IDs) taken off. */
function deliveryIdOf(line: string): string | null {
  const match = /"deliveryKey":"([^"]*)"/.exec(line)
  const key = match?.[1]
  if (!key) return null
  return key
    .slice(key.lastIndexOf(':') + 1)
    .replace(/^<|>$/g, '')
    .toLowerCase()
}
