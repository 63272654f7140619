/**
 * How `npm run failures` finds `npm run dev`'s database without being told: the dev stack writes
 * its origin's connection settings to `.data/dev-stack.json` (only it can read the file: the URL
 * of a real Postgres may carry a password) and removes it on exit; the CLI reads it when
 * DATABASE_URL is not set, and only while the process that wrote it is alive.
 * @module
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isProcessAlive } from '../process-alive'

const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
export const DEV_STACK_FILE = join(REPO_ROOT, '.data', 'dev-stack.json')

/** What the CLI needs of the dev stack: the origin's database variables, and its Worker's. */
export interface DevStackInfo {
  pid: number
  env: Record<string, string>
}

/** The database, and what a replay of an unrecognized event needs (the Worker and its secret). */
const DATABASE_VARIABLES = [
  'DATABASE_URL',
  'DATABASE_DRIVER',
  'NEON_WS_PROXY',
  'DB_POOL_MAX',
  'GATEWAY_URL',
  'ORIGIN_SHARED_SECRET',
]

export function writeDevStack(
  originEnv: Record<string, string>,
  file = DEV_STACK_FILE,
): () => void {
  const env = Object.fromEntries(
    DATABASE_VARIABLES.flatMap((name) => (originEnv[name] ? [[name, originEnv[name]]] : [])),
  )
  const info: DevStackInfo = { pid: process.pid, env }
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(file, `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 })
  return () => rmSync(file, { force: true })
}

/** The dev stack's database variables, or null (no file, unreadable, or its writer is gone). */
export function readDevStack(file = DEV_STACK_FILE): Record<string, string> | null {
  let info: DevStackInfo
  try {
    info = JSON.parse(readFileSync(file, 'utf8')) as DevStackInfo
  } catch {
    return null
  }
  if (!Number.isInteger(info.pid) || !isProcessAlive(info.pid)) return null
  return typeof info.env?.DATABASE_URL === 'string' ? info.env : null
}
