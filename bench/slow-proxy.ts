/**
 * The bench's bottleneck on purpose: a proxy in front of the origin that lets `concurrency`
 * requests through at a time and holds each `delayMs` before forwarding it, so the origin takes
 * at most concurrency ÷ delay requests a second whatever this machine's CPU does (an origin
 * limited by its own round trips, as Postgres over Neon's proxy is). `batch: false` refuses each
 * batch as a whole (413, as a proxy's body limit does): the spool consumer then forwards event by
 * event (single ingest), behind the same limit.
 *
 * `hold()` closes a gate in front of the limit: every request waits there, nothing reaches the
 * origin, until `release()` (the queue bench parks the spool consumer's batch on it while a
 * backlog builds). A caller that gave up while it waited is not served.
 * @module
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo } from 'node:net'

export interface SlowProxy {
  url: string
  /** Requests waiting for their turn now. */
  waiting(): number
  setBatch(on: boolean): void
  /** From now on, `concurrency` at a time, each held `delayMs` (0: no timer at all). */
  setLimits(limits: ProxyLimits): void
  /** Requests wait in front of the limit until {@link release}. */
  hold(): void
  release(): void
  close(): Promise<void>
}

export interface ProxyLimits {
  concurrency: number
  delayMs: number
}

export async function startSlowProxy(target: string, initial: ProxyLimits): Promise<SlowProxy> {
  const backend = new URL(target)
  let limits = initial
  let active = 0
  let batch = true
  let held = false
  const queue: Array<() => void> = []
  const next = () => {
    while (!held && active < limits.concurrency && queue.length > 0) queue.shift()?.()
  }
  const release = () => {
    active--
    next()
  }
  const turn = () =>
    new Promise<void>((resolve) => {
      queue.push(() => {
        active++
        resolve()
      })
      next()
    })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (!batch && req.url === '/v1/events/batch') {
      res.writeHead(413, { 'content-type': 'application/json' })
      return void res.end('{"error":{"code":"payload_too_large"}}')
    }
    await turn()
    try {
      // A caller that gave up while it waited (the Worker's forward timed out) is not served:
      // as a proxy drops a request whose client has gone before it reaches the upstream.
      if (res.destroyed) return
      if (limits.delayMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, limits.delayMs))
        if (res.destroyed) return
      }
      await new Promise<void>((resolve) => {
        const upstream = httpRequest(
          {
            host: backend.hostname,
            port: backend.port,
            method: req.method,
            path: req.url,
            headers: req.headers,
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(res)
            answer.on('end', resolve)
            answer.on('error', resolve)
          },
        )
        upstream.on('error', () => {
          res.destroy()
          resolve()
        })
        upstream.end(Buffer.concat(chunks))
      })
    } finally {
      release()
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    waiting: () => queue.length,
    setBatch(on) {
      batch = on
    },
    setLimits(to) {
      limits = to
      next()
    },
    hold() {
      held = true
    },
    release() {
      held = false
      next()
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
