/**
 * A redis-server of the stack's own on a free port, without persistence, so that stopping it is
 * a real Redis outage for the Upstash stand-in on top, and restarting it (same port) brings back
 * an empty Redis, as a crashed cache node does. The shared Redis on 6379 is never touched.
 * @module
 */
import { mkdirSync } from 'node:fs'
import { Redis } from 'ioredis'
import { GroupProcess, type ProcessGuard } from './processes'
import { startOnFreePort } from './readiness'

export interface PrivateRedis {
  port: number
  url: string
  /** SIGKILL: the server is gone at once, with whatever it held. */
  kill(): Promise<void>
  /** Starts again on the same port, empty. */
  start(): Promise<void>
  /** SIGSTOP: the server holds every connection and answers nothing, until {@link resume}. */
  pause(): void
  /** SIGCONT after {@link pause} (harmless when not paused or not running). */
  resume(): void
  /** FLUSHALL: every key gone while the server keeps running. */
  flushAll(): Promise<void>
  stop(): Promise<void>
}

/** Starts redis-server with its files under `dir`, registered with `guard` while it runs. */
export async function startPrivateRedis(dir: string, guard: ProcessGuard): Promise<PrivateRedis> {
  mkdirSync(dir, { recursive: true })
  const launch = async (port: number) => {
    const server = new GroupProcess({
      name: 'redis-server',
      command: 'redis-server',
      args: [
        ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        ...['--daemonize', 'no', '--dir', dir],
      ],
      guard,
    })
    await server.ready((line) => line.includes('Ready to accept connections') || undefined, 20_000)
    return server
  }

  const started = await startOnFreePort(launch)
  const port = started.port
  let server: GroupProcess | undefined = started.server
  const url = `redis://127.0.0.1:${port}`
  const signal = (name: NodeJS.Signals) => {
    if (server?.running) process.kill(server.pid, name)
  }

  return {
    port,
    url,
    async kill() {
      await server?.stop({ signal: 'SIGKILL' })
      server = undefined
    },
    async start() {
      if (!server?.running) server = await launch(port)
    },
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    async flushAll() {
      const client = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 3_000 })
      client.on('error', () => {})
      try {
        await client.flushall()
      } finally {
        client.disconnect()
      }
    },
    async stop() {
      await server?.stop({ signal: 'SIGTERM', graceMs: 5_000 })
      server = undefined
    },
  }
}
