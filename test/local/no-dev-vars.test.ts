/**
 * The typecheck and the workerd tests read wrangler.toml without a developer's `.dev.vars`
 * (local/wrangler-no-dev-vars.ts): with one copied from `.dev.vars.example` beside the config, as
 * the README suggests, `wrangler types` types none of its names and the test pool binds none of
 * its values.
 */
import { execFile } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { generatedTypes, TYPES_FILE } from '../../local/worker-types'
import { REPO_ROOT, WRANGLER_TOML, wranglerEnv } from '../../local/wrangler-config'
import {
  relocatedWranglerToml,
  wranglerConfigWithoutDevVars,
} from '../../local/wrangler-no-dev-vars'

const scratch = mkdtempSync(join(tmpdir(), 'no-dev-vars-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** A checkout's wrangler.toml with a `.dev.vars` copied from the example beside it. */
function checkoutWithDevVars(): string {
  const dir = mkdtempSync(join(scratch, 'checkout-'))
  const config = join(dir, 'wrangler.toml')
  writeFileSync(config, relocatedWranglerToml(readFileSync(WRANGLER_TOML, 'utf8'), REPO_ROOT))
  copyFileSync(join(REPO_ROOT, '.dev.vars.example'), join(dir, '.dev.vars'))
  return config
}

/** The names wrangler would bind for a config (its own reading, in a child process). */
function boundNames(configPath: string): Promise<{ names: string[]; main: string }> {
  const script = `
const { unstable_getMiniflareWorkerOptions } = await import('wrangler')
const { workerOptions, main } = unstable_getMiniflareWorkerOptions(process.argv[1])
process.stdout.write('\\nBOUND ' + JSON.stringify({ names: Object.keys(workerOptions.bindings ?? {}), main }) + '\\n')
`
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script, configPath],
      { cwd: REPO_ROOT, env: wranglerEnv(), timeout: 60_000 },
      (err, stdout) => {
        // wrangler logs to stdout too ("Using secrets defined in .dev.vars").
        const line = stdout.split('\n').find((l) => l.startsWith('BOUND '))
        if (err || !line) reject(err ?? new Error(`no answer from wrangler: ${stdout}`))
        else resolve(JSON.parse(line.slice('BOUND '.length)))
      },
    )
  })
}

describe('wrangler.toml without .dev.vars', () => {
  it('wrangler types beside a .dev.vars: none of its names, and the tracked file is current', () => {
    const typed = generatedTypes(checkoutWithDevVars())
    expect(typed).toContain('ORIGIN_URL: string')
    for (const name of ['SLACK_SIGNING_SECRET', 'OPERATOR_TOKEN', 'WECHAT_TOKENS_BY_ACCOUNT']) {
      expect(typed).not.toContain(name)
    }
    expect(generatedTypes()).toBe(readFileSync(TYPES_FILE, 'utf8'))
  })

  it('the test pool’s copy binds [vars] and none of the .dev.vars beside wrangler.toml', async () => {
    const source = checkoutWithDevVars()
    // The copy is the remedy: the source itself binds the .dev.vars (so this test can fail).
    expect((await boundNames(source)).names).toContain('OPERATOR_TOKEN')
    const copy = wranglerConfigWithoutDevVars(source, join(scratch, 'pool'))
    const { names, main } = await boundNames(copy)
    expect(names).toContain('ORIGIN_URL')
    expect(names).not.toContain('OPERATOR_TOKEN')
    expect(names).not.toContain('SLACK_SIGNING_SECRET')
    expect(main).toBe(join(REPO_ROOT, 'worker', 'index.ts'))
  })
})
