/**
 * CPU profile of the Worker inside workerd, through its inspector (the DevTools protocol that
 * Miniflare proxies on `inspectorPort`): `Profiler.start` before the measured steps,
 * `Profiler.stop` after, the profile written as a `.cpuprofile` that bench/profile.ts reads.
 * @module
 */
import { writeFileSync } from 'node:fs'
import WebSocket from 'ws'
import { within } from './util'

export class WorkerProfiler {
  private nextId = 1
  private waiting = new Map<number, (message: { result?: unknown; error?: unknown }) => void>()

  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: unknown }
      if (message.id === undefined) return
      this.waiting.get(message.id)?.(message)
      this.waiting.delete(message.id)
    })
  }

  /** Connects to `inspectorUrl` and starts sampling (every 200 µs). */
  static async start(inspectorUrl: string): Promise<WorkerProfiler> {
    const socket = new WebSocket(inspectorUrl)
    await within(
      new Promise<void>((resolve, reject) => {
        socket.once('open', () => resolve())
        socket.once('error', reject)
      }),
      10_000,
      'workerd inspector connection',
    )
    const profiler = new WorkerProfiler(socket)
    await profiler.call('Profiler.enable')
    await profiler.call('Profiler.setSamplingInterval', { interval: 200 })
    await profiler.call('Profiler.start')
    return profiler
  }

  private call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.nextId++
    return within(
      new Promise<unknown>((resolve, reject) => {
        this.waiting.set(id, (message) => {
          if (message.error) reject(new Error(`${method}: ${JSON.stringify(message.error)}`))
          else resolve(message.result)
        })
        this.socket.send(JSON.stringify({ id, method, params }))
      }),
      30_000,
      `inspector ${method}`,
    )
  }

  /** Stops sampling, writes the profile to `file`, closes the connection. */
  async stop(file: string): Promise<void> {
    try {
      const result = (await this.call('Profiler.stop')) as { profile: unknown }
      writeFileSync(file, JSON.stringify(result.profile))
    } finally {
      this.socket.close()
    }
  }
}
