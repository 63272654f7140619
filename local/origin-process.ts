/**
 * `origin/main.ts` as a child process, a pod of its own: started on a port (0 = any, kept across
 * restarts), ready at its listening line, killed (a crash) or stopped (a graceful SIGTERM), and
 * restarted. It gets only the settings it is given, never stray ones from this shell.
 * @module
 */
import { parseListeningLine } from '../origin/listening-line'
import { type ExitInfo, GroupProcess, type ProcessGuard } from './processes'
import type { Stoppable } from './stoppable'
import { REPO_ROOT } from './wrangler-config'

/**
 * `node --import tsx`, not the `tsx` binary: that one runs the code in a second node process and
 * relays signals to it, SIGKILLing it when it does not acknowledge within 30 ms (a busy event loop
 * under load), which would turn a graceful SIGTERM into a crash. One process, one signal.
 */
const ORIGIN_COMMAND = [process.execPath, '--import', 'tsx', 'origin/main.ts'] as const

export interface OriginOptions {
  /** 0 = any free port; kept across restarts once known. @default 0 */
  port?: number
  /** @default '127.0.0.1' */
  host?: string
  /**
   * The origin's configuration (DATABASE_URL, NEON_WS_PROXY, ORIGIN_SHARED_SECRET, ...). Origin
   * settings present in this process's environment are NOT inherited: only what is given here.
   */
  env: Record<string, string>
  /** Bound on start-up (tsx compiles on the fly; two busy cores are slow). @default 30000 */
  readyTimeoutMs?: number
  /** Each output line (JSON logs), secrets masked. */
  onLine?: (line: string) => void
  /** For messages. @default 'origin' */
  name?: string
  /** Holds each run's process group while it runs (the stack's watchdog). */
  guard?: ProcessGuard
  /**
   * Keep ORIGIN_SHARED_SECRET and DATABASE_URL unmasked in the output: for a test that proves the
   * origin itself never prints them. @default false
   */
  showSecrets?: boolean
}

export interface OriginHandle extends Stoppable {
  /** http://host:port (stable across restarts). */
  readonly url: string
  readonly port: number
  /** Process id (and process group id) of the current run. */
  readonly pid: number
  /** Whether the current run is up (false after kill/stop, or if it died by itself). */
  readonly running: boolean
  /** The current run ended by itself: not killed or stopped through this handle. */
  readonly crashed: boolean
  /** The current run's exit; settles when it ends for any reason. */
  readonly exited: Promise<ExitInfo>
  /** Last output lines of the current run. */
  output(lines?: number): string
  /** Ends the current run: SIGKILL (a crash, the default) or SIGTERM (graceful, bounded). */
  kill(signal?: 'SIGKILL' | 'SIGTERM'): Promise<ExitInfo>
  /** Starts again on the same port with the same env (stops the current run first if needed). */
  restart(): Promise<void>
}

/**
 * Settings the origin reads. A started origin gets only what the caller passes, never a stray value
 * from the calling shell (a DOWNSTREAM_URL or GMAIL_* there must not reach every test origin).
 */
const ORIGIN_ENV_KEYS = [
  'DATABASE_URL',
  'NEON_WS_PROXY',
  'ORIGIN_PORT',
  'ORIGIN_HOST',
  'ORIGIN_SHARED_SECRET',
  'DB_POOL_MAX',
  'DB_QUERY_TIMEOUT_MS',
  'DB_CONNECT_TIMEOUT_MS',
  'MAX_EVENT_BYTES',
  'LOG_LEVEL',
  'REDIS_KEY_PREFIX',
  'DEDUP_TTL_SECONDS',
  'CLAIM_LEASE_MS',
  'REDIS_TIMEOUT_MS',
  'ORIGIN_TIMEOUT_MS',
]
const ORIGIN_ENV_PREFIXES = ['GMAIL_', 'DOWNSTREAM_', 'OUTBOX_', 'FAILURE_', 'UPSTASH_']

export function originProcessEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const key of Object.keys(base)) {
    if (ORIGIN_ENV_KEYS.includes(key) || ORIGIN_ENV_PREFIXES.some((p) => key.startsWith(p))) {
      delete base[key]
    }
  }
  return { ...base, ...env }
}

/**
 * Starts `origin/main.ts` (through tsx) in its own process group and waits for its listening line.
 * @example
 * const origin = await startOrigin({ env: { ...db.originEnv, ORIGIN_SHARED_SECRET: secret } })
 * await origin.kill('SIGKILL') // crash a pod
 * await origin.restart()
 */
export async function startOrigin(options: OriginOptions): Promise<OriginHandle> {
  const host = options.host ?? '127.0.0.1'
  const name = options.name ?? 'origin'
  const secrets = options.showSecrets
    ? []
    : [options.env.ORIGIN_SHARED_SECRET ?? '', options.env.DATABASE_URL ?? '']
        .flatMap((value) => value.split(','))
        .filter(Boolean)
  let port = options.port ?? 0
  let current: GroupProcess
  let url = ''
  /** Killed or stopped through the handle, and not restarted since. */
  let down = false

  async function launch(): Promise<void> {
    const child = new GroupProcess({
      name,
      command: ORIGIN_COMMAND[0],
      args: ORIGIN_COMMAND.slice(1),
      cwd: REPO_ROOT,
      env: originProcessEnv({ ...options.env, ORIGIN_PORT: String(port), ORIGIN_HOST: host }),
      secrets,
      onLine: options.onLine,
      guard: options.guard,
    })
    current = child
    url = await child.ready(parseListeningLine, options.readyTimeoutMs ?? 30_000)
    port = Number(new URL(url).port)
  }

  await launch()
  const handle: OriginHandle = {
    get url() {
      return url
    },
    get port() {
      return port
    },
    get pid() {
      return current.pid
    },
    get running() {
      return current.running && !down
    },
    get crashed() {
      return !current.running && !down
    },
    get exited() {
      return current.exited
    },
    output: (lines) => current.output(lines),
    kill(signal = 'SIGKILL') {
      down = true
      return current.stop({ signal, graceMs: 10_000 })
    },
    async restart() {
      await current.stop({ graceMs: 10_000 })
      await launch()
      down = false
    },
    async stop() {
      down = true
      await current.stop({ graceMs: 10_000 })
    },
  }
  return handle
}
