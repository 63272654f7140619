/**
 * A redis-server of the suite's own on a free port, without persistence, so that stopping it is
 * a real Redis outage for the Upstash stand-in on top, and restarting it (same port) brings back
 * an empty Redis, as a crashed cache node does. The shared Redis on 6379 is never touched.
 * @module
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { ServerProcess, startOnFreePort } from './server-process'
import type { Watchdog } from './watchdog'

export interface PrivateRedis {
  port: number
  url: string
  /** SIGKILL: the server is gone at once, with whatever it held. */
  kill(): Promise<void>
  /** Starts again on the same port, empty. */
  start(): Promise<void>
  /** FLUSHALL: every key gone while the server keeps running. */
  flushAll(): Promise<void>
  stop(): Promise<void>
}

export async function startPrivateRedis(watchdog: Watchdog): Promise<PrivateRedis> {
  const dir = join(watchdog.root, 'redis')
  mkdirSync(dir, { recursive: true })
  const launch = (port: number) =>
    ServerProcess.start({
      name: 'redis-server',
      command: 'redis-server',
      args: [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
        '--dir',
        dir,
      ],
      watchdog,
      ready: (line) => line.includes('Ready to accept connections'),
    })

  const started = await startOnFreePort(launch)
  const port = started.port
  let server: ServerProcess | undefined = started.server
  const url = `redis://127.0.0.1:${port}`

  return {
    port,
    url,
    async kill() {
      await server?.stop('SIGKILL')
      server = undefined
    },
    async start() {
      if (!server?.running) server = await launch(port)
    },
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
      await server?.stop('SIGTERM', 5_000)
      server = undefined
    },
  }
}
