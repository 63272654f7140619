/**
 * Serves one PGlite database to many Postgres wire-protocol connections, one SESSION at a time.
 *
 * Why not `@electric-sql/pglite-socket`: it queues single protocol messages, so the extended-query
 * messages of two connections interleave on PGlite's one backend (A: Parse, Bind; B: Parse, Bind;
 * A: Execute runs B's statement). Seen through the origin as 34000 `portal "" does not exist` and
 * queries answered with another connection's rows. It also never closes a connection after the
 * client's Terminate, and a failed message leaves its queue stuck for good.
 *
 * Here a connection takes the backend ("the floor") for its first message and keeps it until the
 * backend is idle again: after a Sync or a simple Query, outside any transaction. Everyone else
 * waits, in order. The waits are bounded: a holder silent for `holdTimeoutMs` (idle in a
 * transaction, or halfway through a batch) is disconnected and its transaction rolled back.
 * @module
 */
import { createServer, type Server, type Socket } from 'node:net'
import type { PGlite } from '@electric-sql/pglite'
import { closeBeforeParse, StatementSlots, scopeStatementName } from './pglite-statements'

const SSL_REQUEST = 80877103
const GSSENC_REQUEST = 80877104
const CANCEL_REQUEST = 80877102
const PROTOCOL_3 = 196608
/** Frontend message types after which the backend answers ReadyForQuery. */
const SYNC_POINTS = new Set(['S', 'Q'])
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024

export interface PgliteWireOptions {
  db: PGlite
  port?: number
  host?: string
  /** @default 64 */
  maxConnections?: number
  /** A connection holding the backend this long without sending anything is dropped. @default 30000 */
  holdTimeoutMs?: number
}

export interface PgliteWireServer {
  host: string
  port: number
  stats(): { activeConnections: number; queuedQueries: number; maxConnections: number }
  /** Disconnects everyone (rolling back an open transaction) and stops listening. */
  close(): Promise<void>
}

/** One client connection and the bytes it sent that are not processed yet. */
interface Connection {
  socket: Socket
  buffer: Buffer
  started: boolean
  closed: boolean
  /** Set while this connection works through its buffer. */
  busy: boolean
  /** Its statement names' prefix on the shared backend (local/pglite-statements.ts). */
  slot: number
}

export async function servePgliteWire(options: PgliteWireOptions): Promise<PgliteWireServer> {
  const { db } = options
  const maxConnections = options.maxConnections ?? 64
  const holdTimeoutMs = options.holdTimeoutMs ?? 30_000
  const connections = new Set<Connection>()
  const slots = new StatementSlots()

  // The floor: who may talk to the backend now, and who waits (FIFO).
  let holder: Connection | null = null
  const waiting: Array<{ conn: Connection; grant: () => void }> = []
  let holdTimer: NodeJS.Timeout | undefined

  function armHoldTimer(conn: Connection): void {
    clearTimeout(holdTimer)
    holdTimer = setTimeout(() => {
      if (holder === conn) conn.socket.destroy(new Error('held the database too long'))
    }, holdTimeoutMs)
    holdTimer.unref()
  }

  function acquire(conn: Connection): Promise<void> {
    if (holder === conn) return Promise.resolve()
    if (holder === null) {
      holder = conn
      armHoldTimer(conn)
      return Promise.resolve()
    }
    return new Promise((grant) => waiting.push({ conn, grant }))
  }

  function release(conn: Connection): void {
    if (holder !== conn) return
    clearTimeout(holdTimer)
    holder = null
    const next = waiting.shift()
    if (next) {
      holder = next.conn
      armHoldTimer(next.conn)
      next.grant()
    }
  }

  /** Drops a connection: its open transaction is rolled back before anyone else gets the floor. */
  async function drop(conn: Connection): Promise<void> {
    if (conn.closed) return
    conn.closed = true
    connections.delete(conn)
    slots.give(conn.slot)
    const queued = waiting.findIndex((w) => w.conn === conn)
    if (queued >= 0) waiting.splice(queued, 1)
    if (!conn.socket.destroyed) conn.socket.destroy()
    if (holder === conn) {
      if (!db.closed && db.isInTransaction()) await db.exec('ROLLBACK').catch(() => {})
      release(conn)
    }
  }

  /** The next complete message in the buffer: [type ('' for untyped startup ones), bytes]. */
  function nextMessage(conn: Connection): [string, Buffer] | null {
    const buf = conn.buffer
    if (!conn.started) {
      if (buf.length < 4) return null
      const length = buf.readInt32BE(0)
      if (length < 8 || length > 10_000) throw new Error('bad startup message')
      if (buf.length < length) return null
      return ['', buf.subarray(0, length)]
    }
    if (buf.length < 5) return null
    const length = buf.readInt32BE(1)
    if (length < 4 || length > MAX_MESSAGE_BYTES) throw new Error('bad message length')
    if (buf.length < length + 1) return null
    return [String.fromCharCode(buf[0] as number), buf.subarray(0, length + 1)]
  }

  /** Runs one message; its answer goes to the client unless `answer` is false. */
  async function execute(conn: Connection, message: Buffer, answer = true): Promise<void> {
    await db.runExclusive(() =>
      db.execProtocolRawStream(new Uint8Array(message), {
        onRawData: (data) => {
          if (answer && !conn.socket.destroyed) conn.socket.write(Buffer.from(data))
        },
      }),
    )
  }

  /** A message with this connection's statement names, after what a named Parse needs first. */
  async function executeScoped(conn: Connection, type: string, message: Buffer): Promise<void> {
    if (type === '') return execute(conn, message)
    const scoped = scopeStatementName(type, message, `c${conn.slot}_`)
    const close = closeBeforeParse(type, scoped)
    if (close) await execute(conn, close, false)
    await execute(conn, scoped)
  }

  /** Works through everything complete in the buffer; called on every chunk of data. */
  async function pump(conn: Connection): Promise<void> {
    if (conn.busy) return
    conn.busy = true
    try {
      for (;;) {
        if (conn.closed) return
        const next = nextMessage(conn)
        if (!next) return
        const [type, message] = next
        conn.buffer = conn.buffer.subarray(message.length)
        if (type === '') {
          const code = message.readInt32BE(4)
          if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
            conn.socket.write('N') // no encryption here; the client goes on in plain text
            continue
          }
          if (code === CANCEL_REQUEST || code !== PROTOCOL_3) {
            // PGlite has no second process to cancel with; unknown protocols are refused.
            await drop(conn)
            return
          }
          conn.started = true
        }
        if (type === 'X') {
          // Terminate: hang up, which the Neon client waits for.
          conn.socket.end()
          await drop(conn)
          return
        }
        await acquire(conn)
        if (conn.closed) return
        armHoldTimer(conn)
        await executeScoped(conn, type, message)
        const syncPoint = type === '' || SYNC_POINTS.has(type)
        if (syncPoint && !db.isInTransaction() && nextMessage(conn) === null) release(conn)
      }
    } catch {
      // A malformed stream or a failed message ends this connection, never the server.
      await drop(conn)
    } finally {
      conn.busy = false
    }
  }

  const server: Server = createServer((socket) => {
    if (connections.size >= maxConnections) {
      socket.destroy()
      return
    }
    socket.setNoDelay(true)
    const conn: Connection = {
      socket,
      buffer: Buffer.alloc(0),
      started: false,
      closed: false,
      busy: false,
      slot: slots.take(),
    }
    connections.add(conn)
    socket.on('data', (data: Buffer) => {
      conn.buffer = conn.buffer.length === 0 ? data : Buffer.concat([conn.buffer, data])
      if (holder === conn) armHoldTimer(conn)
      void pump(conn)
    })
    socket.on('error', () => void drop(conn))
    socket.on('close', () => void drop(conn))
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve())
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    host: options.host ?? '127.0.0.1',
    port,
    stats: () => ({
      activeConnections: connections.size,
      queuedQueries: waiting.length,
      maxConnections,
    }),
    async close() {
      await Promise.all([...connections].map((conn) => drop(conn)))
      clearTimeout(holdTimer)
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
