/**
 * The last line of cleanup of a stack with servers of its own (the fault suite, the soak; see
 * local/stack.ts). Stopping the stack stops everything, and `process.on('exit')` covers a crash;
 * neither runs when this process itself is killed (SIGKILL, or a SIGTERM from a test runner that
 * gives up on it). Then a detached watcher process, started here, notices that this process is
 * gone, ends every process group registered with it (private redis-server and postgres, origin
 * processes, workerd) and removes the stack's temporary directory.
 *
 * Registration is one file per process group (or single process: Miniflare's workerd is not a
 * group leader) under `<root>/.groups/`, naming the signal that ends it cleanly (Postgres:
 * SIGQUIT, its immediate shutdown, which also frees its shared memory); SIGKILL follows a second
 * later for whatever is left.
 * @module
 */
import { spawn } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type ProcessGuard, signalGroup } from './processes'

const WATCHER = `
const { readdirSync, readFileSync, rmSync } = require('node:fs')
const [parent, root] = process.argv.slice(1)
const alive = (pid) => { try { process.kill(pid, 0); return true } catch (e) { return e.code === 'EPERM' } }
const signal = (pid, sig) => { try { process.kill(pid, sig) } catch {} }
const timer = setInterval(() => {
  if (alive(Number(parent))) return
  clearInterval(timer)
  const dir = root + '/.groups'
  let groups = []
  try { groups = readdirSync(dir).map((name) => [Number(name), JSON.parse(readFileSync(dir + '/' + name, 'utf8'))]) } catch {}
  for (const [pid, { first }] of groups) if (first) signal(pid, first)
  setTimeout(() => {
    for (const [pid, { group }] of groups) signal(group ? -pid : pid, 'SIGKILL')
    rmSync(root, { recursive: true, force: true })
  }, 1000)
}, 500)
`

interface Registration {
  /** Sent first, to the leader ('' = none: SIGKILL at once). */
  first: NodeJS.Signals | ''
  /** A process group (its leader's pid), or a single process. */
  group: boolean
}

export class Watchdog implements ProcessGuard {
  private readonly groupsDir: string
  private readonly pid: number | undefined
  /** What is registered, by pid. */
  private readonly live = new Map<number, Registration>()
  private stopped = false

  /** Starts the watcher that cleans `root` (and the registered groups) once this process is gone. */
  constructor(readonly root: string) {
    this.groupsDir = join(root, '.groups')
    mkdirSync(this.groupsDir, { recursive: true })
    const child = spawn(process.execPath, ['-e', WATCHER, String(process.pid), root], {
      detached: true,
      stdio: 'ignore',
    })
    child.unref()
    this.pid = child.pid
    // A crash of this process runs 'exit' handlers: end the groups at once (synchronously).
    process.on('exit', this.onExit)
  }

  private readonly onExit = () => {
    for (const [pid, { first, group }] of this.live) {
      if (!first && group) signalGroup(pid, 'SIGKILL')
      else {
        try {
          process.kill(pid, first || 'SIGKILL')
        } catch {
          // Already gone.
        }
      }
    }
  }

  /**
   * Remembers a process group (or with `group: false` one process) to end if this process dies
   * before {@link release}; `first` is sent to the leader before the SIGKILL.
   */
  register(pid: number, options: Partial<Registration> = {}): void {
    const registration: Registration = { first: options.first ?? '', group: options.group ?? true }
    this.live.set(pid, registration)
    writeFileSync(join(this.groupsDir, String(pid)), JSON.stringify(registration))
  }

  release(pid: number): void {
    this.live.delete(pid)
    rmSync(join(this.groupsDir, String(pid)), { force: true })
  }

  /** Normal end: end anything still registered, stop the watcher, remove `root`. Idempotent. */
  stop(): void {
    if (this.stopped) return
    this.stopped = true
    this.onExit()
    process.off('exit', this.onExit)
    if (this.pid !== undefined) signalGroup(this.pid, 'SIGKILL')
    rmSync(this.root, { recursive: true, force: true })
  }
}
