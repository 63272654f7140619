/**
 * A downstream consumer for the relay tests: a real HTTP server that records every hand-off
 * (Idempotency-Key, body, what it answered) and can be told to fail. "Delivered" means answered
 * 2xx: the count the tests hold to one per outbox row.
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readBody } from '../../local/http-body'

export type DownstreamMode =
  | { kind: 'ok'; delayMs?: number }
  | { kind: 'status'; status: number }
  /** Drops the connection without an answer (a network failure for the relay). */
  | { kind: 'reset' }

export interface HandOffSeen {
  key: string | undefined
  body: { outboxId: string; messageId: string; topic: string; payload: Record<string, unknown> }
  answered: number | 'reset'
}

export interface TestDownstream {
  /** Base URL; the tests append a path and query (e.g. a token that must never be logged). */
  url: string
  setMode(mode: DownstreamMode): void
  seen(): HandOffSeen[]
  /** 2xx answers by Idempotency-Key. */
  deliveredByKey(): Map<string, number>
  close(): Promise<void>
}

export async function startDownstream(): Promise<TestDownstream> {
  let mode: DownstreamMode = { kind: 'ok' }
  const seen: HandOffSeen[] = []

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = JSON.parse(await readBody(req)) as HandOffSeen['body']
    const key = req.headers['idempotency-key'] as string | undefined
    const current = mode
    if (current.kind === 'reset') {
      seen.push({ key, body, answered: 'reset' })
      req.socket.destroy()
      return
    }
    if (current.kind === 'status') {
      seen.push({ key, body, answered: current.status })
      res.writeHead(current.status, { 'content-type': 'application/json' })
      res.end('{"error":"test downstream failing"}')
      return
    }
    if (current.delayMs) await new Promise((r) => setTimeout(r, current.delayMs))
    seen.push({ key, body, answered: 202 })
    res.writeHead(202, { 'content-type': 'application/json' })
    res.end('{"accepted":true}')
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    setMode: (next) => {
      mode = next
    },
    seen: () => [...seen],
    deliveredByKey() {
      const counts = new Map<string, number>()
      for (const s of seen) {
        if (typeof s.answered === 'number' && s.answered < 300 && s.key) {
          counts.set(s.key, (counts.get(s.key) ?? 0) + 1)
        }
      }
      return counts
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
