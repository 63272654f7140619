/**
 * A server the fault suite owns outright (redis-server, postgres): started in its own process
 * group, optionally as another user (Postgres refuses to run as root), its output kept for error
 * messages, registered with the {@link Watchdog} while it runs. Stopping it is the fault: a
 * signal to the server itself (Redis SIGKILL = crash; Postgres SIGINT / SIGQUIT = `pg_ctl stop
 * -m fast` / `-m immediate`), then the whole group is waited for, SIGKILL after a bound.
 * @module
 */
import { spawn } from 'node:child_process'
import { delay, type ExitInfo, freePort, signalGroup } from '../../../local/processes'
import type { Watchdog } from './watchdog'

export interface ServerProcessOptions {
  /** For messages: "redis-server", "postgres". */
  name: string
  command: string
  args: string[]
  /** Run as this user and group (only when this process may: root). */
  user?: { uid: number; gid: number }
  env?: NodeJS.ProcessEnv
  watchdog: Watchdog
  /** What ends it cleanly if this process dies first (see {@link Watchdog.register}). */
  cleanupSignal?: NodeJS.Signals
  /** True for the output line that says the server accepts connections. */
  ready: (line: string) => boolean
  /** @default 20000 */
  readyTimeoutMs?: number
}

export class ServerProcess {
  readonly pid: number
  readonly exited: Promise<ExitInfo>
  private exitInfo: ExitInfo | undefined
  private readonly lines: string[] = []

  private constructor(private readonly options: ServerProcessOptions) {
    const child = spawn(options.command, options.args, {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: options.env ?? process.env,
      ...(options.user ?? {}),
    })
    if (child.pid === undefined) throw new Error(`${options.name}: could not start`)
    this.pid = child.pid
    options.watchdog.register(this.pid, { first: options.cleanupSignal ?? '' })
    for (const stream of [child.stdout, child.stderr]) {
      stream?.setEncoding('utf8')
      stream?.on('data', (chunk: string) => {
        for (const line of chunk.split('\n')) if (line) this.lines.push(line)
        if (this.lines.length > 200) this.lines.splice(0, this.lines.length - 200)
      })
    }
    this.exited = new Promise<ExitInfo>((resolve) => {
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal }
        resolve(this.exitInfo)
      })
      child.once('error', () => {
        this.exitInfo ??= { code: null, signal: null }
        resolve(this.exitInfo)
      })
    })
  }

  /** Starts the server and resolves once it printed its ready line (rejects if it exits first). */
  static async start(options: ServerProcessOptions): Promise<ServerProcess> {
    const server = new ServerProcess(options)
    const deadline = Date.now() + (options.readyTimeoutMs ?? 20_000)
    while (!server.lines.some(options.ready)) {
      if (server.exitInfo || Date.now() > deadline) {
        await server.stop('SIGKILL')
        throw new Error(
          `${options.name} ${server.exitInfo ? 'exited' : 'was not ready in time'}:\n${server.output()}`,
        )
      }
      await delay(25)
    }
    return server
  }

  get running(): boolean {
    return this.exitInfo === undefined
  }

  output(lines = 30): string {
    return this.lines.slice(-lines).join('\n')
  }

  /**
   * Sends `signal` to the server process (not its group: Postgres backends are told by their
   * postmaster, as with pg_ctl), waits for the group to end, SIGKILLs it after `graceMs`.
   */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<ExitInfo> {
    try {
      process.kill(this.pid, signal)
    } catch {
      // Already gone.
    }
    if (!(await this.groupGone(graceMs))) {
      signalGroup(this.pid, 'SIGKILL')
      if (!(await this.groupGone(5_000))) {
        throw new Error(`${this.options.name}: process group ${this.pid} survived SIGKILL`)
      }
    }
    this.options.watchdog.release(this.pid)
    return Promise.race([this.exited, delay(1_000).then(() => ({ code: null, signal }))])
  }

  private async groupGone(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs
    while (signalGroup(this.pid, 0)) {
      if (Date.now() >= deadline) return false
      await delay(20)
    }
    return true
  }
}

/**
 * Starts a server on a free port. `freePort` is a guess (another process may bind the port
 * before the server does), so a failed start is tried again on another port, a few times.
 */
export async function startOnFreePort<T>(
  launch: (port: number) => Promise<T>,
  attempts = 5,
): Promise<{ port: number; server: T }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    try {
      return { port, server: await launch(port) }
    } catch (err) {
      if (attempt >= attempts) throw err
    }
  }
}
