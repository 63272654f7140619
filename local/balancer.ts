/**
 * The load balancer in front of the origin pods, as small as one can be: the Worker's ORIGIN_URL
 * points here, and each request goes to the next backend in turn (round robin per request), with
 * no health checks and no retries. When the chosen backend is down or dies mid-request, the
 * Worker's connection is dropped, as a TCP load balancer whose backend vanished would do: the
 * Worker sees a network error, exactly what it would see talking to that pod directly.
 *
 * It can also play a WAF in front of the origin that refuses some events for a while: every
 * request whose body contains a poison marker is answered with a fixed status, never forwarded;
 * and a wall in front of the whole origin (an SSO or access wall, a proxy's own page): see
 * {@link Wall}.
 * @module
 */
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
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
  /** Requests matching the rule get its status (null: none); `poisoned()` counts them. */
  setPoison(poison: PoisonRule | null): void
  poisoned(): number
  /**
   * The spool queue's consumers failing: every request they make (header `x-dedup-via: queue`) is
   * answered `status` (null: none), live forwards pass. An independent rule, next to the poison.
   */
  failQueueConsumer(status: number | null): void
  /** Every request meets the wall (null: none, pass through); `wallHits()` counts them. */
  setWall(wall: Wall | null): void
  /** Requests the wall answered, and those for its login page (a followed redirect lands there). */
  wallHits(): { walled: number; login: number }
  /**
   * Every backend's answer is held back `ms` before it is passed on (0: none): an origin that works
   * but answers slowly, as under a backfill. A caller that gives up first cuts the request.
   */
  setAnswerDelay(ms: number): void
  /** Requests handed to a backend and not finished yet (a kill now cuts them mid-request). */
  inFlight(): number
  close(): Promise<void>
}

/** A WAF rule: bodies containing `marker` (on `path` only, when given) are answered `status`. */
export interface PoisonRule {
  marker: string
  status: number
  /** Only requests to this route and the routes under it (`/v1/events`: the batch route too). */
  path?: string
}

/**
 * `redirect`: 302 to `/login`, a page answering 200 HTML (an SSO wall; followed, a POST becomes a
 * GET that "succeeds"). `html`: 200 with an HTML page of its own (a proxy, a captive portal).
 */
export type Wall = 'redirect' | 'html'

const LOGIN_PATH = '/login'
const LOGIN_PAGE = '<!doctype html><title>Sign in</title><p>Sign in to continue</p>'

export async function startBalancer(backends: string[]): Promise<Balancer> {
  let targets = backends.map((url) => new URL(url))
  let next = 0
  const sent = new Map<string, number>()
  const failures = { midRequest: 0, unreachable: 0 }
  let poison: PoisonRule | null = null
  let poisoned = 0
  let consumerFailure: number | null = null
  let inFlight = 0
  let wall: Wall | null = null
  let answerDelayMs = 0
  const wallHits = { walled: 0, login: 0 }

  /** The wall's answer (true), or false to let the request through. */
  function walled(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.url === LOGIN_PATH) wallHits.login++
    else if (wall) wallHits.walled++
    else return false
    req.resume()
    if (wall === 'redirect' && req.url !== LOGIN_PATH) {
      res.writeHead(302, { location: LOGIN_PATH })
      res.end()
    } else {
      res.writeHead(200, { 'content-type': 'text/html' })
      res.end(LOGIN_PAGE)
    }
    return true
  }

  const server = createServer((req, res) => {
    if (walled(req, res)) return
    if (consumerFailure !== null && req.headers['x-dedup-via'] === 'queue') {
      req.resume()
      res.writeHead(consumerFailure, { 'content-type': 'text/plain' })
      res.end('queue consumer failing')
      return
    }
    if (poison && (!poison.path || isUnder(req.url, poison.path))) {
      return refuseIfPoisoned(req, res, poison)
    }
    forward(req, res)
  })

  /** Buffers the body to look for the marker; forwards it untouched when it is not there. */
  function refuseIfPoisoned(req: IncomingMessage, res: ServerResponse, rule: PoisonRule): void {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      if (body.includes(rule.marker)) {
        poisoned++
        res.writeHead(rule.status, { 'content-type': 'text/html' })
        res.end('<html>Request blocked</html>')
        return
      }
      forward(req, res, body)
    })
  }

  function forward(req: IncomingMessage, res: ServerResponse, body?: Buffer): void {
    const target = targets[next++ % targets.length]
    if (!target) {
      req.socket.destroy()
      return
    }
    sent.set(target.origin, (sent.get(target.origin) ?? 0) + 1)
    inFlight++
    let finished = false
    const finish = () => {
      if (!finished) inFlight--
      finished = true
    }
    res.once('close', finish)
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
        const pass = () => {
          if (res.destroyed) return void answer.resume()
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        }
        answer.on('error', () => res.destroy())
        answer.on('aborted', () => res.destroy())
        if (answerDelayMs > 0) setTimeout(pass, answerDelayMs)
        else pass()
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
    if (body) upstream.end(body)
    else req.pipe(upstream)
  }
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
    setPoison(rule) {
      poison = rule
    },
    poisoned: () => poisoned,
    failQueueConsumer(status) {
      consumerFailure = status
    },
    setWall(next) {
      wall = next
    },
    wallHits: () => ({ ...wallHits }),
    setAnswerDelay(ms) {
      answerDelayMs = ms
    },
    inFlight: () => inFlight,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

/** `url` is `path` or a route under it. */
function isUnder(url: string | undefined, path: string): boolean {
  return url === path || (url?.startsWith(`${path}/`) ?? false)
}
