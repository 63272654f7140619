/**
 * The load balancer in front of the origin pods, as small as one can be: the Worker's ORIGIN_URL
 * points here, and each request goes to the next backend in turn (round robin per request), with
 * no health checks and no retries. When the chosen backend is down or dies mid-request, the
 * Worker's connection is dropped, as a TCP load balancer whose backend vanished would do: the
 * Worker sees a network error, exactly what it would see talking to that pod directly.
 * @module
 */
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Balancer {
  url: string
  /** Replaces the backends (origin base URLs); later requests rotate over these. */
  setBackends(urls: string[]): void
  /** How many requests went to each backend so far. */
  counts(): Record<string, number>
  /**
   * Requests whose backend connection broke after it was made (the pod died mid-request), and
   * requests whose backend could not be reached at all.
   */
  failures(): { midRequest: number; unreachable: number }
  close(): Promise<void>
}

export async function startBalancer(backends: string[]): Promise<Balancer> {
  let targets = backends.map((url) => new URL(url))
  let next = 0
  const sent = new Map<string, number>()
  const failures = { midRequest: 0, unreachable: 0 }

  const server = createServer((req, res) => {
    const target = targets[next++ % targets.length]
    if (!target) {
      req.socket.destroy()
      return
    }
    sent.set(target.origin, (sent.get(target.origin) ?? 0) + 1)
    const upstream = httpRequest(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent: false,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
        answer.on('error', () => res.destroy())
        answer.on('aborted', () => res.destroy())
      },
    )
    let connected = false
    upstream.on('socket', (socket) => socket.once('connect', () => (connected = true)))
    // The backend refused, reset or vanished: drop the Worker's connection the same way.
    upstream.on('error', () => {
      if (connected) failures.midRequest++
      else failures.unreachable++
      res.destroy()
      req.socket.destroy()
    })
    // The Worker gave up (its timeout): stop talking to the backend too.
    res.on('close', () => upstream.destroy())
    req.pipe(upstream)
  })
  server.keepAliveTimeout = 5_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    setBackends(urls) {
      targets = urls.map((url) => new URL(url))
    },
    counts: () => Object.fromEntries(sent),
    failures: () => ({ ...failures }),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
