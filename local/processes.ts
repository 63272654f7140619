/**
 * The one process supervisor of the local stack, the tests, the fault suite, the soak and the
 * bench: {@link GroupProcess} starts a child in its own process group (so that stopping it stops
 * everything it started: `wrangler dev` starts workerd processes, Postgres its backends), waits for
 * its readiness line, keeps its last output lines (known secret values masked), and stops it:
 * gracefully, as a crash, or with a signal to the leader alone (Postgres' shutdown modes).
 * A {@link ProcessGuard} (local/watchdog.ts) can hold every group to be ended if this process dies.
 *
 * Every wait here is bounded.
 * @module
 */
import { type ChildProcess, spawn } from 'node:child_process'

export class ProcessError extends Error {
  readonly code: 'exited_early' | 'not_ready' | 'stop_timeout'
  constructor(code: ProcessError['code'], message: string) {
    super(message)
    this.name = 'ProcessError'
    this.code = code
  }
}

/**
 * Keeps a record of running process groups and ends them if this process dies without stopping
 * them (local/watchdog.ts); `first` is the signal that ends one cleanly, `group: false` a single
 * process that is not a group leader (Miniflare's workerd).
 */
export interface ProcessGuard {
  register(pid: number, options?: { first?: NodeJS.Signals | ''; group?: boolean }): void
  release(pid: number): void
}

export interface GroupProcessOptions {
  /** Shown in messages: "origin", "wrangler dev". */
  name: string
  command: string
  args: string[]
  cwd?: string
  env?: NodeJS.ProcessEnv
  /** Run as this user and group (only when this process may: root). */
  user?: { uid: number; gid: number }
  /** Registered with it while it runs. */
  guard?: ProcessGuard
  /** What the guard sends the leader first if this process dies (Postgres: SIGQUIT). */
  guardSignal?: NodeJS.Signals
  /** Values never to appear in kept or forwarded output (secrets); masked as ***. */
  secrets?: string[]
  /** Each output line, already masked. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void
  /** Lines of output kept for error messages. @default 200 */
  keepLines?: number
}

/** How a process ended: exit code, or the signal that ended it. */
export interface ExitInfo {
  code: number | null
  signal: NodeJS.Signals | null
}

/** Groups still running, killed outright if this process exits without stopping them. */
const liveGroups = new Set<number>()
let exitHookInstalled = false

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // Last resort for crashes and forgotten handles; `exit` handlers must be synchronous, and a
  // SIGKILL of this process itself cannot be caught at all (then the groups outlive it).
  process.on('exit', () => {
    for (const pgid of liveGroups) signalGroup(pgid, 'SIGKILL')
  })
}

/** Signals every process in the group; false when none is left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function signalLeader(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // Already gone.
  }
}

function masker(secrets: string[] | undefined): (text: string) => string {
  // Short values would mask ordinary words; none of ours is that short.
  const values = (secrets ?? []).filter((s) => s.length >= 6).sort((a, b) => b.length - a.length)
  if (values.length === 0) return (text) => text
  return (text) => values.reduce((out, value) => out.split(value).join('***'), text)
}

/** A process group led by one child; {@link GroupProcess.stop} ends all of it. */
export class GroupProcess {
  readonly name: string
  readonly child: ChildProcess
  readonly pid: number
  /** Settles once the leader has exited (the group may outlive it for a moment). */
  readonly exited: Promise<ExitInfo>
  private exitInfo: ExitInfo | undefined
  private readonly lines: string[] = []
  private readonly keepLines: number
  private readonly lineListeners = new Set<(line: string) => void>()
  private readonly guard: ProcessGuard | undefined

  constructor(options: GroupProcessOptions) {
    this.name = options.name
    this.keepLines = options.keepLines ?? 200
    installExitHook()
    this.child = spawn(options.command, options.args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      // Its own process group, and no terminal: Ctrl-C in the dev terminal reaches only `npm run
      // dev`, which then stops the children in order.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.user ?? {}),
    })
    if (this.child.pid === undefined) {
      throw new ProcessError('exited_early', `${this.name}: could not start ${options.command}`)
    }
    this.pid = this.child.pid
    liveGroups.add(this.pid)
    this.guard = options.guard
    this.guard?.register(this.pid, { first: options.guardSignal ?? '' })
    const mask = masker(options.secrets)
    for (const stream of ['stdout', 'stderr'] as const) {
      let partial = ''
      this.child[stream]?.setEncoding('utf8')
      this.child[stream]?.on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n')
        partial = parts.pop() ?? ''
        for (const raw of parts) this.line(mask(raw.replace(/\r$/, '')), stream, options.onLine)
      })
      this.child[stream]?.on('end', () => {
        if (partial) this.line(mask(partial), stream, options.onLine)
        partial = ''
      })
    }
    this.exited = new Promise<ExitInfo>((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal }
        resolve(this.exitInfo)
      })
      this.child.once('error', () => {
        this.exitInfo ??= { code: null, signal: null }
        resolve(this.exitInfo)
      })
    })
  }

  private line(
    line: string,
    stream: 'stdout' | 'stderr',
    onLine: GroupProcessOptions['onLine'],
  ): void {
    this.lines.push(line)
    if (this.lines.length > this.keepLines) this.lines.shift()
    for (const listener of this.lineListeners) listener(line)
    onLine?.(line, stream)
  }

  /** The leader's exit, once it has exited. */
  get exit(): ExitInfo | undefined {
    return this.exitInfo
  }

  /** The leader has not exited. */
  get running(): boolean {
    return this.exitInfo === undefined
  }

  /** The last lines of output (masked), for error messages. */
  output(lines = 40): string {
    return this.lines.slice(-lines).join('\n')
  }

  /**
   * Resolves with the first value `match` returns for an output line (already seen lines count);
   * rejects if the process exits first or after `timeoutMs`.
   */
  waitForLine<T>(match: (line: string) => T | undefined, timeoutMs: number): Promise<T> {
    for (const line of this.lines) {
      const found = match(line)
      if (found !== undefined) return Promise.resolve(found)
    }
    return new Promise<T>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer)
        this.lineListeners.delete(listener)
      }
      const listener = (line: string) => {
        const found = match(line)
        if (found === undefined) return
        done()
        resolve(found)
      }
      const timer = setTimeout(() => {
        done()
        reject(this.notReady(`not ready within ${timeoutMs} ms`))
      }, timeoutMs)
      this.lineListeners.add(listener)
      this.exited.then((info) => {
        done()
        reject(this.exitedEarly(info))
      })
    })
  }

  /**
   * {@link waitForLine}, and on failure (an early exit, no such line in time) the group is killed
   * before the error is thrown: a process that did not come up leaves nothing behind.
   */
  async ready<T>(match: (line: string) => T | undefined, timeoutMs: number): Promise<T> {
    try {
      return await this.waitForLine(match, timeoutMs)
    } catch (err) {
      await this.stop({ signal: 'SIGKILL' }).catch(() => {})
      throw err
    }
  }

  exitedEarly(info: ExitInfo): ProcessError {
    const how = info.signal ? `signal ${info.signal}` : `code ${info.code}`
    return new ProcessError(
      'exited_early',
      `${this.name} exited (${how}) before it was ready. Last output:\n${this.output()}`,
    )
  }

  notReady(what: string): ProcessError {
    return new ProcessError('not_ready', `${this.name} ${what}. Last output:\n${this.output()}`)
  }

  /**
   * Stops the whole group: `signal` first (default SIGTERM: a graceful close), SIGKILL after
   * `graceMs`, and resolves once no process of the group is left. SIGKILL first is a crash.
   * `leaderOnly` sends `signal` to the leader alone, which tells the rest (a postmaster its
   * backends, as `pg_ctl stop` does); the SIGKILL after the grace still goes to the whole group.
   */
  async stop(
    options: { signal?: NodeJS.Signals; graceMs?: number; leaderOnly?: boolean } = {},
  ): Promise<ExitInfo> {
    const signal = options.signal ?? 'SIGTERM'
    const graceMs = signal === 'SIGKILL' ? 0 : (options.graceMs ?? 5_000)
    if (options.leaderOnly) signalLeader(this.pid, signal)
    else signalGroup(this.pid, signal)
    if (!(await this.groupGone(graceMs))) {
      signalGroup(this.pid, 'SIGKILL')
      if (!(await this.groupGone(5_000))) {
        throw new ProcessError(
          'stop_timeout',
          `${this.name}: process group ${this.pid} survived SIGKILL`,
        )
      }
    }
    liveGroups.delete(this.pid)
    this.guard?.release(this.pid)
    // The leader is gone too; its exit event may still be on its way.
    return Promise.race([
      this.exited,
      delay(1_000).then(() => this.exitInfo ?? { code: null, signal }),
    ])
  }

  /** Polls until no process of the group is left (also reaps: the leader is our child). */
  private async groupGone(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (!signalGroup(this.pid, 0)) return true
      if (Date.now() >= deadline) return false
      await delay(25)
    }
  }
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
