/**
 * Dev/test stand-in for Neon's WebSocket endpoint: `@neondatabase/serverless` speaks the Postgres
 * wire protocol over a WebSocket; this relays each WebSocket to a TCP connection to a real Postgres.
 *
 * It counts the statements its clients send (local/pg-wire-tally.ts), for the bench's cost per
 * event. Only for this machine: it has no TLS and no auth of its own, and listens on loopback.
 * Clients reach it through `neonConfig.wsProxy = (host, port) => '<here>/v2?address=host:port'`.
 * @module
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connect, type Socket } from 'node:net'
import { WebSocketServer } from 'ws'
import { WireTally } from './pg-wire-tally'

export interface NeonWsProxyOptions {
  /** Where Postgres really listens. Every connection goes there, whatever address the client names. */
  target: { host: string; port: number }
  port?: number
  host?: string
}

export interface RunningProxy {
  port: number
  /** The value for `NEON_WS_PROXY`: host:port/v2 */
  wsProxy: string
  /**
   * Fault hook: cuts every open connection (both ends) at once, as a Neon compute that goes away
   * does, transactions in flight included; keeps listening, so clients reconnect. Returns how
   * many were cut.
   */
  dropConnections(): number
  /** Statements sent through it so far, by label (`SELECT ingest_message`, `BEGIN`, ...). */
  statementCounts(): Record<string, number>
  close(): Promise<void>
}

/** Postgres frontend Terminate message ('X', length 4): the client is done with this connection. */
function isTerminate(chunk: Buffer): boolean {
  return chunk.length >= 5 && chunk[0] === 0x58 && chunk.readInt32BE(1) === 4
}

export async function startNeonWsProxy(options: NeonWsProxyOptions): Promise<RunningProxy> {
  const server: Server = createServer((_req, res) => {
    res.writeHead(426, { 'content-type': 'text/plain' }).end('WebSocket upgrade required\n')
  })
  const wss = new WebSocketServer({ server, maxPayload: 64 * 1024 * 1024 })
  const sockets = new Set<Socket>()
  const statements = new Map<string, number>()

  wss.on('connection', (ws) => {
    let tally: WireTally | null = new WireTally(statements)
    const tcp = connect(options.target.port, options.target.host)
    sockets.add(tcp)
    tcp.setNoDelay(true)
    const pending: Buffer[] = []
    let connected = false
    tcp.on('connect', () => {
      connected = true
      for (const chunk of pending.splice(0)) tcp.write(chunk)
    })
    tcp.on('data', (data) => {
      if (ws.readyState === ws.OPEN) ws.send(data)
    })
    const closeBoth = () => {
      sockets.delete(tcp)
      tcp.destroy()
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close()
    }
    tcp.on('close', closeBoth)
    tcp.on('error', closeBoth)
    ws.on('message', (data: Buffer) => {
      if (connected) tcp.write(data)
      else pending.push(data)
      try {
        tally?.push(data)
      } catch {
        // A stream it cannot follow is relayed all the same, just no longer counted.
        tally = null
      }
      // The Neon client waits for the server to hang up after Terminate; close both ends so a
      // pool's end() never stalls, whatever the server behind does.
      if (isTerminate(data)) setTimeout(closeBoth, 0)
    })
    ws.on('close', closeBoth)
    ws.on('error', closeBoth)
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  const host = options.host ?? '127.0.0.1'
  return {
    port,
    wsProxy: `${host}:${port}/v2`,
    dropConnections() {
      const cut = sockets.size
      for (const s of sockets) s.destroy()
      for (const client of wss.clients) client.terminate()
      return cut
    },
    statementCounts: () => Object.fromEntries(statements),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        for (const client of wss.clients) client.terminate()
        wss.close()
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
