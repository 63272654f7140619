/**
 * Whether a server is there: a free port to start it on (a start that lost the port tried again
 * on another), its HTTP answering, its port closed again after a stop. Every wait is bounded.
 * @module
 */
import { connect, createServer } from 'node:net'
import { delay, ProcessError } from './processes'

/**
 * Polls `url` until `accept(status)` or the bound; each attempt has its own short timeout. Rejects
 * early if `abort` settles first (the process behind the URL died).
 */
export async function waitForHttp(
  url: string,
  options: {
    timeoutMs: number
    accept?: (status: number) => boolean
    abort?: Promise<unknown>
  },
): Promise<number> {
  const accept = options.accept ?? ((status) => status < 500)
  const deadline = Date.now() + options.timeoutMs
  let aborted = false
  options.abort?.then(
    () => {
      aborted = true
    },
    () => {
      aborted = true
    },
  )
  let last = 'no answer'
  while (Date.now() < deadline && !aborted) {
    try {
      // Generous per attempt: workerd's first request compiles the Worker (seconds on a busy
      // machine), and an attempt aborted mid-way only shows up as a "Broken pipe" error there.
      const remaining = Math.max(100, deadline - Date.now())
      const res = await fetch(url, { signal: AbortSignal.timeout(Math.min(15_000, remaining)) })
      await res.body?.cancel()
      if (accept(res.status)) return res.status
      last = `HTTP ${res.status}`
    } catch (err) {
      last = (err as Error).message
    }
    await delay(100)
  }
  throw new ProcessError(
    'not_ready',
    aborted
      ? `${url}: the process exited (${last})`
      : `${url}: not ready in ${options.timeoutMs} ms (${last})`,
  )
}

/**
 * A port that was free a moment ago (bind to 0, read, close). Racy by nature: use it only where a
 * program needs a number up front (wrangler's inspector) and a clash would fail loudly.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, host, () => {
      const address = server.address()
      const port = typeof address === 'object' && address ? address.port : 0
      server.close(() => resolve(port))
    })
  })
}

/** True when something accepts TCP connections on the port (what a stop must leave: nothing). */
export function isListening(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, host)
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * Starts a server on a free port. `freePort` is a guess (another process may bind the port
 * before the server does), so a failed start is tried again on another port, a few times.
 */
export async function startOnFreePort<T>(
  launch: (port: number) => Promise<T>,
  attempts = 5,
): Promise<{ port: number; server: T }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort()
    try {
      return { port, server: await launch(port) }
    } catch (err) {
      if (attempt >= attempts) throw err
    }
  }
}
