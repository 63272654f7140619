/**
 * Counting what the gateway and the origin say they did, from their decision lines (one shape,
 * contract/decision-log.ts): the Worker's (which layer decided: redis, postgres, gateway) and the
 * origin's (created, duplicate). A step's counts are a second, independent view of its responses.
 *
 * Miniflare prints workerd's output through this process's `console.log`, one call per line;
 * {@link captureConsoleLines} takes those lines instead of letting thousands a second reach the
 * terminal (the bench's own output goes to `process.stdout.write`).
 * @module
 */

export type Counts = Record<string, number>

/** Tallies `decision/decidedBy` (gateway) and `origin:outcome` (origin) over a step. */
export class LogTally {
  private counts: Counts = {}
  /** Lines that were neither: warnings, errors (a few are kept to show). */
  readonly other: string[] = []

  observe(line: string): void {
    if (line.includes('"msg":"decision"') && line.includes('"component":"origin"')) {
      this.add(`origin ${/"decision":"([a-z_]+)"/.exec(line)?.[1] ?? '?'}`)
      return
    }
    if (line.includes('"msg":"decision"')) {
      const decision = /"decision":"([a-z_]+)"/.exec(line)?.[1] ?? '?'
      const by = /"decidedBy":"([a-z_]+)"/.exec(line)?.[1] ?? '?'
      const status = /"status":(\d+)/.exec(line)?.[1] ?? '?'
      this.add(`gateway ${decision} by ${by} (${status})`)
      return
    }
    if (line.trim() && this.other.length < 20) this.other.push(line.slice(0, 300))
  }

  private add(key: string): void {
    this.counts[key] = (this.counts[key] ?? 0) + 1
  }

  /** The counts since the last take, and a fresh start. */
  take(): Counts {
    const out = this.counts
    this.counts = {}
    this.other.length = 0
    return out
  }
}

/**
 * Routes every `console.log` / `console.error` line to `onLine` instead of the terminal, until the
 * returned function is called. The benchmark writes its own output with `process.stdout.write`.
 */
export function captureConsoleLines(onLine: (line: string) => void): () => void {
  const { log, error } = console
  const take = (...args: unknown[]) => {
    for (const line of args.map(String).join(' ').split('\n')) onLine(line)
  }
  console.log = take
  console.error = take
  return () => {
    console.log = log
    console.error = error
  }
}
