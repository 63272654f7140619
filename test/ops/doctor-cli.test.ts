/**
 * `npm run doctor` on the command line: it exits 1 on errors and never prints a secret; a secrets
 * file it cannot read, or that is neither JSON nor dotenv, is an error saying so; and the template
 * command the README and docs/deploying.md give, run as written, writes the JSON file
 * `wrangler secret bulk` takes (npm's banner on stdout kept `… > secrets.json` from being one).
 */
import { exec, execFile } from 'node:child_process'
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { REPO_ROOT } from '../../local/wrangler-config'
import { secretsTemplate } from '../../ops/secrets-template'
import { goodSecrets } from './support/deployment'

interface Run {
  code: number
  stdout: string
  stderr: string
}

const settle =
  (resolve: (run: Run) => void) =>
  (err: { code?: number | string | null } | null, stdout: string, stderr: string) => {
    const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
    resolve({ code, stdout: String(stdout), stderr: String(stderr) })
  }

/** The environment of a person's shell: no INIT_CWD left over from the `npm test` around us. */
function shellEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { INIT_CWD: _, ...env } = process.env
  return { ...env, ...extra }
}

function doctor(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'ops/doctor.ts', ...args],
      { cwd: REPO_ROOT, env: shellEnv(env), timeout: 60_000 },
      settle(resolve),
    )
  })
}

/** A shell command as a person types it, in `cwd` (bounded: 90 s). */
function shell(command: string, cwd: string): Promise<Run> {
  return new Promise((resolve) => {
    exec(command, { cwd, env: shellEnv(), timeout: 90_000 }, settle(resolve))
  })
}

const dir = mkdtempSync(join(tmpdir(), 'inbound-dedup-doctor-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('npm run doctor', () => {
  it('on the shipped production environment: exit 1, the placeholder origin and KV namespace named, no secret printed', async () => {
    const file = join(dir, 'secrets.json')
    writeFileSync(file, JSON.stringify(goodSecrets()))
    const run = await doctor(['--env', 'production', '--secrets-file', file])
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(/ERROR ORIGIN_URL is still the placeholder/)
    expect(run.stdout).toMatch(
      /ERROR the CONNECTIONS KV namespace id is wrangler.toml's placeholder/,
    )
    expect(run.stdout).toMatch(/doctor: 2 errors/)
    for (const value of Object.values(goodSecrets())) {
      if (!value.startsWith('https://')) expect(run.stdout).not.toContain(value)
    }
  })

  it('on a good environment of a wrangler.toml of its own: exit 0', async () => {
    const toml = join(dir, 'wrangler.toml')
    writeFileSync(
      toml,
      `name = "t"\nmain = "${join(REPO_ROOT, 'worker/index.ts')}"\ncompatibility_date = "2026-04-01"\n` +
        '[env.production]\nname = "t-production"\n[env.production.vars]\nORIGIN_URL = "https://origin.acme.test"\n' +
        '[[env.production.queues.producers]]\nbinding = "SPOOL"\nqueue = "q-p"\n' +
        '[[env.production.queues.producers]]\nbinding = "SPOOL_DEAD"\nqueue = "q-p-dead"\n' +
        '[[env.production.queues.consumers]]\nqueue = "q-p"\nmax_retries = 100\ndead_letter_queue = "q-p-dead"\n' +
        '[[env.production.queues.consumers]]\nqueue = "q-p-dead"\n' +
        '[[env.production.r2_buckets]]\nbinding = "SPOOL_BODIES"\nbucket_name = "b-p"\n',
    )
    const run = await doctor(['--env', 'production', '--config', toml], goodSecrets())
    expect(run.stdout).toMatch(/doctor: 0 errors/)
    expect(run.code).toBe(0)
  })

  it('on the dev configuration with .dev.vars.example: its loopback origin and short dev secret', async () => {
    const run = await doctor(['--secrets-file', '.dev.vars.example'])
    expect(run.code).toBe(1)
    const errorLines = run.stdout.split('\n').filter((line) => line.startsWith('ERROR'))
    expect(errorLines).toEqual([
      'ERROR ORIGIN_URL http://127.0.0.1:8788 is a loopback address: every event would spool',
      'ERROR ORIGIN_SHARED_SECRET: 1 of its 1 entries are shorter than 32 characters',
      "ERROR the CONNECTIONS KV namespace id is wrangler.toml's placeholder",
    ])
    expect(run.stdout).toContain('OK    channel telegram has what it needs')
  })
})

describe('--secrets-file', () => {
  const banner = '\n> inbound-dedup@0.1.0 doctor\n> tsx ops/doctor.ts --print-secrets-template\n\n'
  it.each([
    [
      'text that is not JSON',
      'broken.json',
      '{"ORIGIN_SHARED_SECRET": "broken-secret-value',
      'not valid JSON',
    ],
    [
      'npm’s banner before the JSON (not "secrets missing")',
      'with-banner.json',
      `${banner}{"ORIGIN_SHARED_SECRET": "banner-secret-value"}`,
      'not valid JSON',
    ],
    [
      'a line neither JSON nor NAME=value',
      'secrets.env',
      'ORIGIN_SHARED_SECRET=x\n> stray text-secret-value\n',
      'line 2 is not NAME=value: neither JSON nor a dotenv file',
    ],
  ])(
    'a secrets file with %s: exit 2, saying so, nothing of its text printed',
    async (_, name, text, says) => {
      const file = join(dir, name)
      writeFileSync(file, text)
      const run = await doctor(['--env', 'production', '--secrets-file', file])
      expect(run.code).toBe(2)
      expect(run.stderr).toContain(`doctor: --secrets-file: ${says}`)
      expect(run.stdout).not.toContain('is not set')
      expect(run.stdout + run.stderr).not.toMatch(/-secret-value/)
    },
  )

  it('a file that cannot be read: exit 2, saying so', async () => {
    const missing = await doctor(['--secrets-file', join(dir, 'nowhere.json')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('--secrets-file: cannot read it (ENOENT)')
    const locked = join(dir, 'locked.json')
    writeFileSync(locked, '{}')
    chmodSync(locked, 0)
    const run = await doctor(['--secrets-file', locked])
    // root reads any file: then it is simply an empty object, which names no secret.
    if (process.getuid?.() !== 0) expect(run.stderr).toContain('cannot read it (EACCES)')
  })
})

describe('the secrets template', () => {
  it('--print-secrets-template prints the bulk file', async () => {
    const run = await doctor(['--print-secrets-template'])
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toEqual(secretsTemplate())
    // Which secret is whose, from the channels' own variables.
    expect(run.stderr).toMatch(/^channel whatsapp-cloud: WHATSAPP_APP_SECRET, /m)
    expect(run.stderr).toMatch(/^the gateway: ORIGIN_SHARED_SECRET, /m)
  })

  it('the README’s and deploying.md’s command, run as written: a JSON file for its owner, never overwritten', async () => {
    const command = (file: string) => {
      const text = readFileSync(join(REPO_ROOT, file), 'utf8').replace(/\s*\n\s*/g, ' ')
      return text.match(/`(npm run doctor -- [^`]*--write-secrets-template secrets\.json)`/)?.[1]
    }
    const documented = command('docs/deploying.md')
    expect(documented).toBeDefined()
    expect(command('README.md')).toBe(documented)
    // In a folder of the checkout, as a person runs it (npm finds the package from there).
    const scratch = join(REPO_ROOT, '.wrangler', `doctor-template-${process.pid}`)
    mkdirSync(scratch, { recursive: true })
    try {
      const run = await shell(documented ?? '', scratch)
      expect(run.code).toBe(0)
      const file = join(scratch, 'secrets.json')
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(secretsTemplate())
      expect(statSync(file).mode & 0o777).toBe(0o600)
      expect(run.stdout).toContain('npx wrangler secret bulk secrets.json --env production')
      // Filled in, then the command again: refused, the file kept.
      writeFileSync(file, JSON.stringify(goodSecrets()))
      const again = await shell(documented ?? '', scratch)
      expect(again.code).toBe(2)
      expect(again.stderr).toContain('secrets.json exists (it may hold secrets)')
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(goodSecrets())
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  })
})
