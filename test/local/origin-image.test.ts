/**
 * The origin's container image without Docker (no daemon here, no base image to pull): the steps
 * the Dockerfile performs, read from it, done in a clean directory. The production install, only
 * the files it copies, the migrate one-shot against an empty database, the CMD answering /healthz
 * and the HEALTHCHECK passing, and SIGTERM draining the origin to exit code 0.
 * Not exercised here: the base image itself, USER node's file permissions, the build cache.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ensureDatabase } from '../../local/database-layer'
import { freePort } from '../../local/readiness'
import { scratch } from '../../local/services'
import { REPO_ROOT } from '../../local/wrangler-config'
import { eventFixture, signedPost } from '../support/origin'

interface ImageSteps {
  install: string[]
  env: Record<string, string>
  /** [source in the repo, destination in the image's WORKDIR] */
  copies: Array<[string, string]>
  cmd: string[]
  healthcheck: string[]
  migrate: string[]
}

/** The Dockerfile's steps: the deps stage's RUN, the runtime stage's ENV, COPY, HEALTHCHECK, CMD. */
function readDockerfile(): ImageSteps {
  const lines = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8').split('\n')
  const steps: ImageSteps = {
    install: [],
    env: {},
    copies: [],
    cmd: [],
    healthcheck: [],
    migrate: [],
  }
  let stage = ''
  for (const line of lines) {
    const from = /^FROM \S+ AS (\S+)/.exec(line)
    if (from) stage = from[1] ?? ''
    const migrate = /^#\s+migrate:.*inbound-dedup-origin (.+)$/.exec(line)
    if (migrate) steps.migrate = (migrate[1] ?? '').split(' ')
    if (line.startsWith('RUN ') && stage === 'deps') steps.install = line.slice(4).split(' ')
    if (stage !== 'runtime') continue
    const env = /^ENV (\w+)=(\S+)$/.exec(line)
    if (env) steps.env[env[1] ?? ''] = env[2] ?? ''
    const copy = /^COPY (?!--from)(.+) (\S+)$/.exec(line)
    if (copy) for (const src of (copy[1] ?? '').split(' ')) steps.copies.push([src, copy[2] ?? ''])
    if (line.startsWith('CMD ')) steps.cmd = JSON.parse(line.slice(4))
    const health = /^HEALTHCHECK .*CMD (\[.+\])$/.exec(line)
    if (health) steps.healthcheck = JSON.parse(health[1] ?? '[]')
  }
  return steps
}

/** `node` in the image is node; here, this one. */
const withNode = (command: string[]) =>
  command[0] === 'node' ? [process.execPath, ...command.slice(1)] : command

function run(
  command: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const [file, ...args] = withNode(command)
  return new Promise((resolve) => {
    execFile(file ?? '', args, { cwd, env, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
      resolve({ code, stdout: String(stdout), stderr: String(stderr) })
    })
  })
}

const steps = readDockerfile()
const app = mkdtempSync(join(tmpdir(), 'inbound-dedup-image-'))
const database = scratch('image')
const secret = 'image-test-shared-secret-0123456789abcdef'
// A clean environment: what the image sets, and what `docker run -e` would add.
const imageEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => ({
  PATH: process.env.PATH,
  HOME: app,
  ...steps.env,
  ...extra,
})

beforeAll(async () => {
  for (const file of ['package.json', 'package-lock.json']) {
    cpSync(join(REPO_ROOT, file), join(app, file))
  }
  // From the local npm cache where it has the packages (the image build downloads them).
  const install = await run([...steps.install, '--prefer-offline'], app, {
    ...process.env,
    NODE_ENV: 'production',
  })
  expect(install.code, install.stderr).toBe(0)
  for (const [src, dest] of steps.copies) {
    if (src === 'package.json') continue
    const target = join(app, dest)
    mkdirSync(dirname(target), { recursive: true })
    cpSync(join(REPO_ROOT, src), target, { recursive: true })
  }
  await ensureDatabase(database.databaseUrl)
}, 180_000)

afterAll(async () => {
  rmSync(app, { recursive: true, force: true })
  await database.remove()
})

describe('the origin image, its steps done without Docker', () => {
  it('has the steps it should: production install, migrate one-shot, CMD, HEALTHCHECK, non-root', () => {
    expect(steps.install).toEqual(['npm', 'ci', '--omit=dev', '--no-audit', '--no-fund'])
    expect(steps.env.ORIGIN_HOST).toBe('0.0.0.0')
    expect(steps.cmd).toEqual(['node', '--import', 'tsx', 'origin/main.ts'])
    expect(steps.migrate).toEqual(['node', '--import', 'tsx', 'ops/migrate.ts'])
    expect(steps.healthcheck[0]).toBe('node')
    expect(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')).toMatch(/^USER node$/m)
  })

  it('migrates an empty database, serves, passes its HEALTHCHECK, and drains on SIGTERM', async () => {
    const migrated = await run(steps.migrate, app, imageEnv({ DATABASE_URL: database.databaseUrl }))
    expect(migrated.code, migrated.stderr).toBe(0)

    const port = String(await freePort())
    const env = imageEnv({
      ORIGIN_PORT: port,
      DATABASE_URL: database.databaseUrl,
      ORIGIN_SHARED_SECRET: secret,
    })
    const [file, ...args] = withNode(steps.cmd)
    const origin: ChildProcess = spawn(file ?? '', args, { cwd: app, env })
    let output = ''
    origin.stdout?.on('data', (chunk) => {
      output += String(chunk)
    })
    const exited = new Promise<number | null>((resolve) =>
      origin.on('exit', (code) => resolve(code)),
    )
    try {
      const url = `http://127.0.0.1:${port}`
      await until(async () => (await fetch(`${url}/healthz`).catch(() => null))?.ok === true)
      expect((await run(steps.healthcheck, app, env)).code).toBe(0)
      const event = await eventFixture()
      expect((await signedPost(url, event, secret)).status).toBe(201)

      origin.kill('SIGTERM')
      expect(await withTimeout(exited, 20_000)).toBe(0)
      expect(output).toContain('origin stopped')
      // Its HEALTHCHECK now fails: nothing answers.
      expect((await run(steps.healthcheck, app, env)).code).toBe(1)
    } finally {
      origin.kill('SIGKILL')
    }
  })
})

async function until(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`no exit within ${ms} ms`)), ms),
    ),
  ])
}
