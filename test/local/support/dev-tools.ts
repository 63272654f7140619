/**
 * What test/local/dev.test.ts does beside `npm run dev`, as a person would: run a repo tool or a
 * shell command in the checkout, read rows, and bring a killed origin back with the command the
 * stack printed.
 * @module
 */
import { exec, execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import pg from 'pg'
import { expect } from 'vitest'
import { childrenOf } from '../../../local/proc'
import { GroupProcess, signalGroup } from '../../../local/processes'
import { waitForHttp } from '../../../local/readiness'
import { REPO_ROOT } from '../../../local/stack'

/**
 * Kills the stack's origin, runs the restart command npm run dev prints (as a person pastes it
 * into the shell npm run dev ran in), and checks the origin is back with its console and
 * `/metrics` (OPERATOR_TOKEN) and its claim store (Upstash), no secret printed; then stops it.
 */
export async function restartOriginAsPrinted(
  dev: GroupProcess,
  port: number,
  operatorToken: string,
  shellEnv: NodeJS.ProcessEnv,
) {
  const originPid = childrenOf(dev.pid).find((pid) =>
    readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('origin/main.ts'),
  )
  expect(originPid).toBeDefined()
  signalGroup(originPid ?? 0, 'SIGKILL')
  const command = await dev.waitForLine(
    (line) => (line.trim().endsWith('npm run origin') ? line.trim() : undefined),
    30_000,
  )
  expect(command).toMatch(/^ORIGIN_PORT=\d+ /)
  expect(command).toContain('OPERATOR_TOKEN="$OPERATOR_TOKEN"')
  // The Upstash settings (the Gmail poller's claims), read from where npm run dev read them.
  for (const name of ['UPSTASH_REDIS_REST_URL', 'UPSTASH_REDIS_REST_TOKEN']) {
    expect(command).toContain(` ${name}="$(sed -n 's/^${name}=//p' .dev.vars`)
  }
  expect(command).not.toContain(operatorToken)
  expect(command).not.toMatch(/dev-upstash-token|dev-origin-shared-secret|\*\*\*/)
  const origin = new GroupProcess({
    name: 'the printed origin command',
    command: 'sh',
    args: ['-c', command],
    cwd: REPO_ROOT,
    env: shellEnv,
    secrets: [operatorToken],
  })
  try {
    await waitForHttp(`http://127.0.0.1:${port}/healthz`, {
      timeoutMs: 60_000,
      abort: origin.exited,
    })
    const signIn = await fetch(`http://127.0.0.1:${port}/console/login`, {
      method: 'POST',
      body: new URLSearchParams({ token: operatorToken }),
      redirect: 'manual',
      signal: AbortSignal.timeout(10_000),
    })
    expect(signIn.status).toBe(303)
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`, {
      headers: { authorization: `Bearer ${operatorToken}` },
      signal: AbortSignal.timeout(10_000),
    })
    expect(metrics.status).toBe(200)
  } finally {
    await origin.stop({ graceMs: 5_000 })
  }
}

export async function queryRows(url: string, sql: string, params: unknown[]): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query(sql, params)).rows
  } finally {
    await client.end()
  }
}

/** A shell command in the checkout, as a person types it (bounded: 60 s). */
export function shell(command: string): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    exec(command, { cwd: REPO_ROOT, timeout: 60_000 }, (err, stdout) => {
      resolve({
        code: err ? (typeof err.code === 'number' ? err.code : -1) : 0,
        stdout: String(stdout),
      })
    })
  })
}

/** A repo tool run as a person runs it, without DATABASE_URL (bounded: 60 s). */
export function tool(
  script: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { DATABASE_URL: _, ...env } = process.env
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, ...args],
      { cwd: REPO_ROOT, env, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0
        resolve({ code, stdout: String(stdout), stderr: String(stderr) })
      },
    )
  })
}
