/**
 * A Postgres cluster of the stack's own: `initdb` into the stack's temporary directory, the
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
import { GroupProcess, type ProcessGuard } from './processes'
import { startOnFreePort } from './readiness'

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

/**
 * initdb into `<root>/postgres` and starts the postmaster, registered with `guard` while it runs.
 * As root, `root` itself is given to the `postgres` user too (it must be able to reach its files).
 */
export async function startPrivatePostgres(
  root: string,
  guard: ProcessGuard,
): Promise<PrivatePostgres> {
  const bin = postgresBinDir()
  const user = serverUser()
  const home = join(root, 'postgres')
  const data = join(home, 'data')
  mkdirSync(home, { recursive: true })
  if (user) {
    chownSync(root, user.uid, user.gid)
    chownSync(home, user.uid, user.gid)
  }
  execFileSync(
    join(bin, 'initdb'),
    ['-D', data, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--no-instructions'],
    { stdio: 'pipe', cwd: home, ...(user ?? {}) },
  )

  const launch = async (port: number) => {
    const server = new GroupProcess({
      name: 'postgres',
      command: join(bin, 'postgres'),
      args: [
        ...['-D', data, '-p', String(port), '-k', home, '-c', 'listen_addresses=127.0.0.1'],
        ...['-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'],
      ],
      user,
      env: { ...process.env, LC_ALL: 'C' },
      guard,
      // Immediate shutdown: it also frees the shared memory.
      guardSignal: 'SIGQUIT',
    })
    await server.ready((line) => line.includes('ready to accept connections') || undefined, 20_000)
    return server
  }

  const started = await startOnFreePort(launch)
  const port = started.port
  let server: GroupProcess | undefined = started.server

  const databaseUrl = (name: string) => `postgres://postgres@127.0.0.1:${port}/${name}`
  return {
    port,
    adminUrl: databaseUrl('postgres'),
    databaseUrl,
    async stop(mode) {
      // To the postmaster alone, as pg_ctl does: it tells its backends.
      const signal = mode === 'fast' ? 'SIGINT' : 'SIGQUIT'
      await server?.stop({ signal, leaderOnly: true, graceMs: 10_000 })
      server = undefined
    },
    async start() {
      if (!server?.running) server = await launch(port)
    },
    async close() {
      await server?.stop({ signal: 'SIGINT', leaderOnly: true, graceMs: 10_000 })
      server = undefined
    },
  }
}
