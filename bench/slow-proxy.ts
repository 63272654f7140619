/**
 * The bench's bottleneck on purpose: a proxy in front of the origin that lets `concurrency`
 * requests through at a time and holds each `delayMs` before forwarding it, so the origin takes
 * at most concurrency ÷ delay requests a second whatever this machine's CPU does (an origin
 * limited by its own round trips, as Postgres over Neon's proxy is). `batch: false` answers the
 * batch route 404, as an origin older than it: the spool consumer then forwards event by event
 * (single ingest), behind the same limit.
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
  close(): Promise<void>
}

export async function startSlowProxy(
  target: string,
  limits: { concurrency: number; delayMs: number },
): Promise<SlowProxy> {
  const backend = new URL(target)
  let active = 0
  let batch = true
  const queue: Array<() => void> = []
  const release = () => {
    active--
    queue.shift()?.()
  }
  const turn = () =>
    new Promise<void>((resolve) => {
      const go = () => {
        active++
        resolve()
      }
      if (active < limits.concurrency) go()
      else queue.push(go)
    })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (!batch && req.url === '/v1/events/batch') {
      res.writeHead(404, { 'content-type': 'application/json' })
      return void res.end('{"error":{"code":"not_found"}}')
    }
    await turn()
    try {
      // A caller that gave up while it waited (the Worker's forward timed out) is not served:
      // as a proxy drops a request whose client has gone before it reaches the upstream.
      if (res.destroyed) return
      await new Promise((resolve) => setTimeout(resolve, limits.delayMs))
      if (res.destroyed) return
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
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
