/**
 * What the local stack needs from wrangler.toml (compatibility date and flags, `[vars]`, queue
 * producers and consumers), read by wrangler's own parser, and the Worker bundle built by
 * `wrangler deploy --dry-run`. Both run wrangler in a child process of its own group: importing
 * wrangler here would add a 2 s, 10 MB module with global side effects to every caller.
 * @module
 */
import { mkdirSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { GroupProcess } from './processes'

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
export const WRANGLER_BIN = join(REPO_ROOT, 'node_modules', '.bin', 'wrangler')
/** The gateway Worker's configuration. */
export const WRANGLER_TOML = join(REPO_ROOT, 'wrangler.toml')

/** The environment every wrangler we start gets: no telemetry, no update check, no network. */
export function wranglerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    WRANGLER_SEND_METRICS: 'false',
    WRANGLER_HIDE_BANNER: 'true',
    CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    // Wrangler writes logs and its config under $XDG_CONFIG_HOME/.wrangler; keep them in the repo.
    XDG_CONFIG_HOME: join(REPO_ROOT, '.wrangler', 'config'),
    // Colour codes only where a person reads them directly; captured output stays plain.
    ...(process.stdout.isTTY ? {} : { FORCE_COLOR: '0' }),
    ...extra,
  }
}

export interface WranglerConfig {
  name: string
  main: string
  compatibilityDate: string
  compatibilityFlags: string[]
  /** `[vars]`, as strings. */
  vars: Record<string, string>
  queues: {
    producers: Array<{ binding: string; queue: string }>
    consumers: QueueConsumerConfig[]
  }
  /** `[[r2_buckets]]`: binding → bucket name. */
  r2Buckets: Array<{ binding: string; bucketName: string }>
  /** `[[kv_namespaces]]`: binding → namespace id (the connections, worker/connections/). */
  kvNamespaces: Array<{ binding: string; id: string }>
}

/** One `[[queues.consumers]]` entry, as wrangler.toml spells it. */
export interface QueueConsumerConfig {
  queue: string
  max_batch_size?: number
  max_batch_timeout?: number
  /**
   * Cloudflare's cap on concurrent consumer invocations. Miniflare has no such option: its queue
   * broker hands a queue's batches to the consumer one at a time, so locally it is always 1.
   */
  max_concurrency?: number
  max_retries?: number
  retry_delay?: number
  dead_letter_queue?: string
}

const READ_SCRIPT = `
const { unstable_readConfig } = await import('wrangler')
const c = unstable_readConfig({ config: process.argv[1], env: process.argv[2] || undefined })
const vars = Object.fromEntries(Object.entries(c.vars ?? {}).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]))
process.stdout.write('WRANGLER_CONFIG ' + JSON.stringify({ name: c.name, main: c.main, compatibilityDate: c.compatibility_date, compatibilityFlags: c.compatibility_flags ?? [], vars, queues: { producers: (c.queues?.producers ?? []).map((p) => ({ binding: p.binding, queue: p.queue })), consumers: c.queues?.consumers ?? [] }, r2Buckets: (c.r2_buckets ?? []).map((b) => ({ binding: b.binding, bucketName: b.bucket_name })), kvNamespaces: (c.kv_namespaces ?? []).map((n) => ({ binding: n.binding, id: n.id ?? n.binding })) }) + '\\n')
`

/** Parsed configs by path and environment: each is read once per process. */
const cache = new Map<string, Promise<WranglerConfig>>()

/**
 * Reads a wrangler config once per process, path and environment (bounded: 30 s). `env` names an
 * `[env.NAME]` section, as `wrangler deploy --env NAME` reads it; unset, the top level.
 */
export function readWranglerConfig(
  configPath = WRANGLER_TOML,
  env?: string,
): Promise<WranglerConfig> {
  const cacheKey = `${configPath}\0${env ?? ''}`
  const known = cache.get(cacheKey)
  if (known) return known
  const reading = (async () => {
    const child = new GroupProcess({
      name: 'wrangler config reader',
      command: process.execPath,
      args: ['--input-type=module', '-e', READ_SCRIPT, configPath, env ?? ''],
      cwd: REPO_ROOT,
      env: wranglerEnv(),
    })
    try {
      const prefix = 'WRANGLER_CONFIG '
      const json = await child.waitForLine(
        (line) => (line.startsWith(prefix) ? line.slice(prefix.length) : undefined),
        30_000,
      )
      return JSON.parse(json) as WranglerConfig
    } finally {
      await child.stop({ graceMs: 1_000 })
    }
  })()
  cache.set(cacheKey, reading)
  reading.catch(() => cache.delete(cacheKey))
  return reading
}

/**
 * `wrangler deploy --dry-run --outdir <outDir> --config <configPath>`: the bundle as it would be
 * deployed (works offline, ~1-2 s). Returns the path of the entry module (`main`, as .js).
 */
export async function buildWorker(
  outDir: string,
  options: { configPath?: string; env?: string; timeoutMs?: number } = {},
): Promise<string> {
  const configPath = options.configPath ?? WRANGLER_TOML
  mkdirSync(outDir, { recursive: true })
  const config = readWranglerConfig(configPath, options.env)
  const envArgs = options.env ? ['--env', options.env] : []
  const build = new GroupProcess({
    name: `wrangler deploy --dry-run (${basename(configPath)}${options.env ? ` --env ${options.env}` : ''})`,
    command: WRANGLER_BIN,
    args: ['deploy', '--dry-run', '--outdir', outDir, '--config', configPath, ...envArgs],
    cwd: REPO_ROOT,
    env: wranglerEnv(),
  })
  const timer = setTimeout(
    () => void build.stop({ signal: 'SIGKILL' }),
    options.timeoutMs ?? 60_000,
  )
  const exit = await build.exited
  clearTimeout(timer)
  await build.stop({ graceMs: 1_000 })
  if (exit.code !== 0) {
    throw build.notReady(`failed (${exit.signal ?? `exit code ${exit.code}`})`)
  }
  return join(outDir, basename((await config).main).replace(/\.[cm]?[jt]s$/, '.js'))
}

/** Consumer settings a test may change (e.g. no batch wait); names as in wrangler.toml. */
export type QueueConsumerOverrides = Partial<Omit<QueueConsumerConfig, 'queue'>>

/**
 * wrangler.toml's queues as Miniflare options (`queueProducers`, `queueConsumers`), every value
 * explicit: Miniflare's own defaults (batch 5, 2 retries) are not production's.
 */
export function miniflareQueueOptions(
  config: WranglerConfig,
  overrides: QueueConsumerOverrides = {},
): {
  queueProducers: Record<string, { queueName: string }>
  queueConsumers: Record<
    string,
    {
      maxBatchSize?: number
      maxBatchTimeout?: number
      maxRetries?: number
      retryDelay?: number
      deadLetterQueue?: string
    }
  >
} {
  const queueProducers = Object.fromEntries(
    config.queues.producers.map((p) => [p.binding, { queueName: p.queue }]),
  )
  const queueConsumers = Object.fromEntries(
    config.queues.consumers.map((c) => {
      const merged = { ...c, ...overrides }
      return [
        c.queue,
        {
          maxBatchSize: merged.max_batch_size,
          maxBatchTimeout: merged.max_batch_timeout,
          maxRetries: merged.max_retries,
          retryDelay: merged.retry_delay,
          ...(c.dead_letter_queue ? { deadLetterQueue: c.dead_letter_queue } : {}),
        },
      ]
    }),
  )
  return { queueProducers, queueConsumers }
}
