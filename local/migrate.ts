/**
 * Applies migrations/ with dbmate (its npm package ships the binary). `npm run migrate` runs this
 * against `DATABASE_URL`; the dev stack and the test setup call `migrate()` directly.
 * @module
 */
import { execFile } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/** dbmate talks TCP to Postgres; a local server without TLS needs sslmode=disable spelled out. */
export function dbmateUrl(databaseUrl: string): string {
  const url = new URL(databaseUrl)
  const local = ['127.0.0.1', 'localhost', '::1', '[::1]'].includes(url.hostname)
  if (local && !url.searchParams.has('sslmode')) url.searchParams.set('sslmode', 'disable')
  return url.toString()
}

export async function migrate(databaseUrl: string): Promise<string> {
  const { stdout } = await run(
    join(root, 'node_modules', '.bin', 'dbmate'),
    [
      '--url',
      dbmateUrl(databaseUrl),
      '--migrations-dir',
      join(root, 'migrations'),
      '--no-dump-schema',
      '--wait',
      '--wait-timeout',
      '10s',
      'up',
    ],
    { timeout: 60_000 },
  )
  return stdout
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const url = process.env.DATABASE_URL
  if (!url) {
    console.error('DATABASE_URL is not set: point it at the Postgres to migrate')
    process.exit(2)
  }
  migrate(url).then(
    (out) => process.stdout.write(out || 'migrations: up to date\n'),
    (err: Error & { stderr?: string }) => {
      console.error(`migrate failed: ${err.stderr?.trim() || err.message}`)
      process.exit(1)
    },
  )
}
