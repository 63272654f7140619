/**
 * The Worker on this machine: under `wrangler dev` ({@link startWorkerDev}, what `npm run dev`
 * runs), or its deployable bundle (`wrangler deploy --dry-run`) served by Miniflare
 * ({@link startWorkerMiniflare}: faster; what the tests, the fault suite, the soak and the bench
 * use), with wrangler.toml's compatibility settings, [vars] and queues. Another wrangler config
 * gives another Worker the same way (the bench's verify-only baseline).
 * @module
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Miniflare } from 'miniflare'
import { writePrivateEnvFile } from './env-file'
import { childPids } from './proc'
import { type ExitInfo, GroupProcess, ProcessError, type ProcessGuard } from './processes'
import { freePort, waitForHttp } from './readiness'
import { once, type Stoppable } from './stoppable'
import {
  buildWorker,
  miniflareQueueOptions,
  type QueueConsumerOverrides,
  REPO_ROOT,
  readWranglerConfig,
  WRANGLER_BIN,
  WRANGLER_TOML,
  wranglerEnv,
} from './wrangler-config'

export interface WorkerOptions {
  /** 0 = pick a free port. @default 0 */
  port?: number
  /**
   * Bindings on top of wrangler.toml's [vars]: secrets and overrides (ORIGIN_URL,
   * UPSTASH_REDIS_REST_URL, UPSTASH_REDIS_REST_TOKEN, ORIGIN_SHARED_SECRET, ...).
   */
  vars: Record<string, string>
  /** Names in `vars` whose values are secret (masked in output). @default every name containing SECRET, TOKEN or KEY */
  secretNames?: string[]
  readyTimeoutMs?: number
  onLine?: (line: string) => void
}

export interface WorkerHandle extends Stoppable {
  url: string
  port: number
}

export interface WorkerDevHandle extends WorkerHandle {
  runtime: 'dev'
  readonly pid: number
  readonly exited: Promise<ExitInfo>
  output(lines?: number): string
}

function secretValues(vars: Record<string, string>, names?: string[]): string[] {
  const isSecret = (name: string) =>
    names ? names.includes(name) : /SECRET|TOKEN|KEY|PASSWORD/i.test(name)
  return Object.entries(vars)
    .filter(([name]) => isSecret(name))
    .flatMap(([, value]) => value.split(','))
    .filter(Boolean)
}

/**
 * `wrangler dev` (local mode) in its own process group, ready when GET /healthz answers.
 * The bindings go in through a private file (`--env-file`, local/env-file.ts), never on the
 * command line where `ps` shows them; the output masks the secrets too.
 */
export async function startWorkerDev(options: WorkerOptions): Promise<WorkerDevHandle> {
  const port = options.port || (await freePort())
  const inspectorPort = await freePort()
  mkdirSync(join(REPO_ROOT, '.wrangler', 'config'), { recursive: true })
  const args = [
    'dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--inspector-port',
    String(inspectorPort),
    '--show-interactive-dev-session=false',
  ]
  const envFile = writePrivateEnvFile(options.vars)
  args.push('--env-file', envFile.path)
  const child = new GroupProcess({
    name: 'wrangler dev',
    command: WRANGLER_BIN,
    args,
    cwd: REPO_ROOT,
    env: wranglerEnv(),
    secrets: secretValues(options.vars, options.secretNames),
    onLine: options.onLine,
  })
  const url = `http://127.0.0.1:${port}`
  try {
    await waitForHttp(`${url}/healthz`, {
      timeoutMs: options.readyTimeoutMs ?? 60_000,
      abort: child.exited,
    })
  } catch (err) {
    await child.stop({ signal: 'SIGKILL' }).catch(() => {})
    envFile.remove()
    if (child.exit) throw child.exitedEarly(child.exit)
    throw err instanceof ProcessError ? child.notReady(err.message) : err
  }
  return {
    runtime: 'dev',
    url,
    port,
    pid: child.pid,
    exited: child.exited,
    output: (lines) => child.output(lines),
    stop: once(async () => {
      await child.stop({ graceMs: 5_000 })
      envFile.remove()
    }),
  }
}

export interface WorkerMiniflareOptions extends WorkerOptions {
  /** Where the bundle goes. @default a fresh temporary directory, removed on stop */
  outDir?: string
  /**
   * Source of an ES module served instead of the bundle, which it imports as `./index.js`
   * unchanged: tests wrap the Worker to call a handler Miniflare cannot trigger as they need
   * (`email()` with a message of their own). @default the bundle itself
   */
  entrySource?: string
  /** Changes to wrangler.toml's queue consumer settings (e.g. `{ max_batch_timeout: 0 }`). */
  queueConsumers?: QueueConsumerOverrides
  /** The Worker to build and serve. @default wrangler.toml (the gateway) */
  wranglerConfig?: string
  /** Open workerd's inspector (DevTools protocol) on a free port: CPU profiles. @default false */
  inspector?: boolean
  /** Holds the workerd processes while they run (the stack's watchdog). */
  guard?: ProcessGuard
}

export interface WorkerMiniflareHandle extends WorkerHandle {
  runtime: 'miniflare'
  miniflare: Miniflare
  /** The workerd processes serving it (Linux; [] elsewhere): CPU readings, the watchdog. */
  runtimePids: number[]
  /** ws:// URL of workerd's inspector for this Worker, with `inspector`. */
  inspectorUrl?: string
}

/**
 * Builds the deployable bundle (`wrangler deploy --dry-run`) and serves it with Miniflare on
 * 127.0.0.1, with its wrangler config's compatibility settings, [vars] plus `vars`, its queues
 * (wrangler.toml's: the spool and its dead letters, consumed by the same Worker), its R2
 * buckets (the spool's claim check) and its KV namespaces (the connections).
 * `/cdn-cgi/handler/email` is enabled.
 */
export async function startWorkerMiniflare(
  options: WorkerMiniflareOptions,
): Promise<WorkerMiniflareHandle> {
  const outDir = options.outDir ?? mkdtempSync(join(tmpdir(), 'inbound-dedup-worker-'))
  const removeOutDir = options.outDir === undefined
  const configPath = options.wranglerConfig ?? WRANGLER_TOML
  try {
    const [config, scriptPath, { Miniflare }, inspectorPort] = await Promise.all([
      readWranglerConfig(configPath),
      buildWorker(outDir, { configPath }),
      import('miniflare'),
      options.inspector ? freePort() : undefined,
    ])
    const entryPath = join(outDir, 'entry.js')
    if (options.entrySource !== undefined) writeFileSync(entryPath, options.entrySource)
    const { onLine } = options
    const before = new Set(childPids('workerd'))
    const miniflare = new Miniflare({
      name: config.name,
      scriptPath: options.entrySource === undefined ? scriptPath : entryPath,
      modules: true,
      // The bundle is an ES module; by default Miniflare reads an imported .js as CommonJS.
      modulesRules: [{ type: 'ESModule', include: ['**/*.js'] }],
      modulesRoot: outDir,
      compatibilityDate: config.compatibilityDate,
      compatibilityFlags: config.compatibilityFlags,
      bindings: { ...config.vars, ...options.vars },
      ...miniflareQueueOptions(config, options.queueConsumers),
      // In memory, like the queues: the claim check's bucket lives as long as this Miniflare.
      r2Buckets: Object.fromEntries(config.r2Buckets.map((b) => [b.binding, b.bucketName])),
      // In memory too: the connections the origin publishes (`miniflare.getKVNamespace`).
      kvNamespaces: Object.fromEntries(config.kvNamespaces.map((n) => [n.binding, n.id])),
      port: options.port ?? 0,
      host: '127.0.0.1',
      cf: false,
      unsafeTriggerHandlers: true,
      // The proxy serves this Worker's inspector at ws://127.0.0.1:<port>/<name>.
      ...(inspectorPort ? { inspectorPort, unsafeInspectorProxy: true } : {}),
      // The Worker's log lines go to `onLine` when given (else Miniflare prints them). The
      // handler must return nothing: Miniflare checks, and fails the request otherwise.
      ...(onLine
        ? {
            handleStructuredLogs: ({ message }: { message: string }) => {
              onLine(message)
            },
          }
        : {}),
    })
    let url: URL
    try {
      url = await withTimeout(miniflare.ready, options.readyTimeoutMs ?? 30_000, 'Miniflare')
    } catch (err) {
      await miniflare.dispose().catch(() => {})
      throw err
    }
    // Miniflare ends its workerd when this process exits normally, not when it is killed.
    const runtimePids = childPids('workerd').filter((pid) => !before.has(pid))
    for (const pid of runtimePids) options.guard?.register(pid, { group: false })
    return {
      runtime: 'miniflare',
      url: url.origin,
      port: Number(url.port),
      miniflare,
      runtimePids,
      ...(inspectorPort ? { inspectorUrl: `ws://127.0.0.1:${inspectorPort}/${config.name}` } : {}),
      stop: once(async () => {
        await withTimeout(miniflare.dispose(), 10_000, 'Miniflare dispose')
        for (const pid of runtimePids) options.guard?.release(pid)
        if (removeOutDir) rmSync(outDir, { recursive: true, force: true })
      }),
    }
  } catch (err) {
    if (removeOutDir) rmSync(outDir, { recursive: true, force: true })
    throw err
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(
        () => reject(new ProcessError('not_ready', `${what} did not finish within ${ms} ms`)),
        ms,
      )
    }),
  ])
}
