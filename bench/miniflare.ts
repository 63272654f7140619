/**
 * Worker bundles the benchmark serves itself with Miniflare's own HTTP listener, with the
 * compatibility settings of the production wrangler.toml:
 * - the verify-only baseline (bench/verify-only-worker.ts, built with
 *   `wrangler deploy --dry-run --config bench/verify-only.wrangler.toml`);
 * - the gateway itself with workerd's inspector open, for `BENCH_PROFILE=1` (otherwise the bench
 *   uses local/stack.ts `startWorkerMiniflare`, which has no inspector).
 * @module
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, GroupProcess } from '../local/processes'
import type { WorkerHandle } from '../local/stack'
import {
  buildWorker,
  miniflareQueueOptions,
  REPO_ROOT,
  readWranglerConfig,
  WRANGLER_BIN,
  wranglerEnv,
} from '../local/wrangler-config'
import { within } from './util'

const VERIFY_ONLY_CONFIG = join(REPO_ROOT, 'bench', 'verify-only.wrangler.toml')
const BUILD_TIMEOUT_MS = 60_000

async function buildVerifyOnly(outDir: string): Promise<string> {
  const build = new GroupProcess({
    name: 'wrangler deploy --dry-run (verify-only)',
    command: WRANGLER_BIN,
    args: ['deploy', '--dry-run', '--outdir', outDir, '--config', VERIFY_ONLY_CONFIG],
    cwd: REPO_ROOT,
    env: wranglerEnv(),
  })
  const timer = setTimeout(() => void build.stop({ signal: 'SIGKILL' }), BUILD_TIMEOUT_MS)
  const exit = await build.exited
  clearTimeout(timer)
  await build.stop({ graceMs: 1_000 })
  if (exit.code !== 0) throw build.notReady(`failed (${exit.signal ?? `exit code ${exit.code}`})`)
  return join(outDir, 'verify-only-worker.js')
}

export interface BundleHandle extends WorkerHandle {
  /** ws:// URL of workerd's inspector for this Worker, when one was asked for. */
  inspectorUrl?: string
}

/**
 * Builds `which` and serves it on 127.0.0.1 (a free port) with `vars` as its bindings.
 * @param inspect open workerd's inspector (DevTools protocol) on a free port
 */
export async function serveBundle(
  which: 'verify-only' | 'gateway',
  vars: Record<string, string>,
  inspect = false,
): Promise<BundleHandle> {
  const outDir = mkdtempSync(join(tmpdir(), `inbound-dedup-bench-${which}-`))
  try {
    const [config, scriptPath, { Miniflare }] = await Promise.all([
      readWranglerConfig(),
      which === 'gateway' ? buildWorker(outDir) : buildVerifyOnly(outDir),
      import('miniflare'),
    ])
    const name = `bench-${which}`
    const inspectorPort = inspect ? await freePort() : undefined
    const miniflare = new Miniflare({
      name,
      scriptPath,
      modules: true,
      modulesRoot: outDir,
      compatibilityDate: config.compatibilityDate,
      compatibilityFlags: config.compatibilityFlags,
      bindings: vars,
      ...(which === 'gateway' ? miniflareQueueOptions(config) : {}),
      port: 0,
      host: '127.0.0.1',
      cf: false,
      // The proxy serves this Worker's inspector at ws://127.0.0.1:<port>/<name>.
      ...(inspectorPort ? { inspectorPort, unsafeInspectorProxy: true } : {}),
    })
    let url: URL
    try {
      url = await within(miniflare.ready, 30_000, `Miniflare (${which})`)
    } catch (err) {
      await miniflare.dispose().catch(() => {})
      throw err
    }
    let stopped = false
    return {
      url: url.origin,
      port: Number(url.port),
      inspectorUrl: inspectorPort ? `ws://127.0.0.1:${inspectorPort}/${name}` : undefined,
      async stop() {
        if (stopped) return
        stopped = true
        await within(miniflare.dispose(), 10_000, `Miniflare dispose (${which})`)
        rmSync(outDir, { recursive: true, force: true })
      },
    }
  } catch (err) {
    rmSync(outDir, { recursive: true, force: true })
    throw err
  }
}
