/**
 * How a bench run ends, whatever happens: the things to undo (processes, the database, the Redis
 * keys), and the signals that must reach that cleanup rather than end the process first.
 * @module
 */
import type { Stoppable } from '../local/stoppable'
import { within } from './util'

/**
 * Things to undo, newest first; each bounded, each failure recorded, none stops the others.
 * `runAll` runs once (a signal and the normal end share it); a piece registered after it started
 * is stopped at once.
 */
export class Cleanup {
  private tasks: Array<{ name: string; run: () => Promise<unknown> }> = []
  private running: Promise<void> | undefined
  private problems: string[] = []

  add(name: string, run: () => Promise<unknown>): void {
    if (this.running) {
      void this.runOne({ name, run })
      return
    }
    this.tasks.push({ name, run })
  }

  addStoppable(name: string, piece: Stoppable): void {
    this.add(name, () => piece.stop())
  }

  private async runOne(task: { name: string; run: () => Promise<unknown> }): Promise<void> {
    try {
      await within(task.run(), 20_000, `cleanup: ${task.name}`)
    } catch (err) {
      this.problems.push(`cleanup failed: ${task.name}: ${(err as Error).message}`)
    }
  }

  runAll(problems: string[]): Promise<void> {
    this.problems = problems
    this.running ??= (async () => {
      for (const task of this.tasks.reverse()) await this.runOne(task)
      this.tasks = []
    })()
    return this.running
  }
}

/**
 * Miniflare installs SIGINT / SIGTERM listeners that dispose workerd and exit at once, which would
 * end the run before its cleanup drops the database and deletes the keys. Ours disposes Miniflare
 * too (its stop is a cleanup task), so after the stack is up the signals are `handler`'s alone.
 */
export function claimSignals(handler: (signal: NodeJS.Signals) => void): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    for (const listener of process.listeners(signal)) {
      if (listener !== handler) process.removeListener(signal, listener)
    }
  }
}
