/**
 * A Postgres cluster of the suite's own: `initdb` into the suite's temporary directory, the
 * postmaster run in the foreground on a free port (loopback, fsync off), so that stopping it is a
 * real Postgres outage for the origins and the Neon proxy in front, while the shared server on
 * 5432 and everyone using it are left alone.
 *
 * As root (CI containers, this machine), initdb and postgres refuse to run: both then run as the
 * `postgres` user, which must exist, and the data directory is given to it.
 * @module
 */
import { execFileSync } from 'node:child_process'
import { chownSync, existsSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { ServerProcess, startOnFreePort } from './server-process'
import type { Watchdog } from './watchdog'

export interface PrivatePostgres {
  port: number
  /** Superuser URL of the cluster's `postgres` database (trust auth). */
  adminUrl: string
  /** URL of another database on the same cluster. */
  databaseUrl(name: string): string
  /** `pg_ctl stop -m fast` (SIGINT) or `-m immediate` (SIGQUIT: a crash, recovery on start). */
  stop(mode: 'fast' | 'immediate'): Promise<void>
  /** Starts again on the same port and data directory. */
  start(): Promise<void>
  /** Stops for good (fast). */
  close(): Promise<void>
}

/** The directory holding initdb and postgres: PG_BIN, else the newest Debian-style install. */
export function postgresBinDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  if (versions[0]) return join(root, versions[0], 'bin')
  try {
    return execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim()
  } catch {
    throw new Error(
      'no Postgres server binaries (initdb, postgres) found: install postgresql or set PG_BIN',
    )
  }
}

/** When running as root: the `postgres` user to run the server as. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }))
  try {
    return { uid: id('-u'), gid: id('-g') }
  } catch {
    throw new Error('running as root, and there is no `postgres` user to run initdb/postgres as')
  }
}

export async function startPrivatePostgres(watchdog: Watchdog): Promise<PrivatePostgres> {
  const bin = postgresBinDir()
  const user = serverUser()
  const home = join(watchdog.root, 'postgres')
  const data = join(home, 'data')
  mkdirSync(home, { recursive: true })
  if (user) {
    chownSync(watchdog.root, user.uid, user.gid)
    chownSync(home, user.uid, user.gid)
  }
  execFileSync(
    join(bin, 'initdb'),
    ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { stdio: 'pipe', cwd: home, ...(user ?? {}) },
  )

  const launch = (port: number) =>
    ServerProcess.start({
      name: 'postgres',
      command: join(bin, 'postgres'),
      args: [
        '-D',
        data,
        '-p',
        String(port),
        '-k',
        home,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=200',
      ],
      user,
      env: { ...process.env, LC_ALL: 'C' },
      watchdog,
      cleanupSignal: 'SIGQUIT',
      ready: (line) => line.includes('ready to accept connections'),
    })

  const started = await startOnFreePort(launch)
  const port = started.port
  let server: ServerProcess | undefined = started.server

  const databaseUrl = (name: string) => `postgres://postgres@127.0.0.1:${port}/${name}`
  return {
    port,
    adminUrl: databaseUrl('postgres'),
    databaseUrl,
    async stop(mode) {
      await server?.stop(mode === 'fast' ? 'SIGINT' : 'SIGQUIT')
      server = undefined
    },
    async start() {
      if (!server?.running) server = await launch(port)
    },
    async close() {
      await server?.stop('SIGINT')
      server = undefined
    },
  }
}
