/**
 * The Worker's configuration as the tests and the typecheck read it: wrangler.toml without a
 * developer's `.dev.vars`. wrangler adds every entry of a `.dev.vars` beside the config file to
 * the bindings (`wrangler types` then types them into the tracked worker-configuration.d.ts, and
 * vitest-pool-workers hands them to every workerd test), so one copied from `.dev.vars.example`, as
 * the README suggests, changed what the tests saw.
 *
 * `wrangler types` takes `--env-file`, which replaces `.dev.vars` ({@link NO_ENV_FILE_ARGS}). The
 * test pool has no such option (it calls wrangler's `unstable_getMiniflareWorkerOptions` with the
 * config path alone), so it reads a copy of wrangler.toml in a directory that holds no `.dev.vars`
 * ({@link wranglerConfigWithoutDevVars}).
 * @module
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { devNull } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { REPO_ROOT, WRANGLER_TOML } from './wrangler-config'

/**
 * Arguments for a wrangler command that reads env files: the empty device instead of `.dev.vars`
 * (with any `--env-file`, wrangler skips `.dev.vars` and `.env`).
 */
export const NO_ENV_FILE_ARGS = ['--env-file', devNull] as const

/**
 * wrangler.toml's text with every `main` made absolute, so that the copy names the same entry
 * module from any directory. No other key of ours holds a path.
 */
export function relocatedWranglerToml(text: string, sourceDir: string): string {
  return text.replace(
    /^(\s*main\s*=\s*)"([^"]+)"/gm,
    (_, key: string, path: string) => `${key}${JSON.stringify(resolve(sourceDir, path))}`,
  )
}

/**
 * Writes a copy of `source` (wrangler.toml) into `dir`, a directory of ours that holds no
 * `.dev.vars`, and returns its path. Written whole, then renamed: two runs never read half a file.
 */
export function wranglerConfigWithoutDevVars(
  source = WRANGLER_TOML,
  dir = join(REPO_ROOT, '.wrangler', 'config-without-dev-vars'),
): string {
  mkdirSync(dir, { recursive: true })
  const target = join(dir, 'wrangler.toml')
  const scratch = `${target}.${process.pid}.tmp`
  writeFileSync(scratch, relocatedWranglerToml(readFileSync(source, 'utf8'), dirname(source)))
  renameSync(scratch, target)
  return target
}
