/**
 * The raw-INSERT baseline's server (started by bench/stack.ts): HTTP in, one INSERT of the event's
 * row out, through the origin's own database layer (origin/db: the same `@neondatabase/serverless`
 * Pool, the same local Neon WebSocket proxy, the same pool size, a named prepared statement).
 * No signature, no validation, no customer, conversation or outbox: what one database round trip
 * per event costs on this machine, the ceiling the origin's ingest path is compared with.
 * @module
 */
import { createServer } from 'node:http'
import { pathToFileURL } from 'node:url'
import { createDatabase } from '../origin/db'
import { silentLogger } from '../origin/log'

/** The `msg` of the line it prints once it listens. */
export const READY = 'raw insert server listening'

/** Its own table, shaped like `messages` without the foreign keys. */
const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS bench_raw_inserts (
  id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  channel            text NOT NULL,
  channel_message_id text NOT NULL,
  sender_external_id text NOT NULL,
  body               text NOT NULL,
  payload_hash       text NOT NULL,
  first_delivery_key text NOT NULL,
  occurred_at        timestamptz NOT NULL,
  attachments        jsonb NOT NULL DEFAULT '[]',
  created_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (channel, channel_message_id)
)`

const INSERT = {
  name: 'bench_raw_insert',
  text: `INSERT INTO bench_raw_inserts (channel, channel_message_id, sender_external_id, body,
           payload_hash, first_delivery_key, occurred_at, attachments)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb)
         ON CONFLICT (channel, channel_message_id) DO NOTHING
         RETURNING id`,
}

interface EventFields {
  channel: string
  messageKey: string
  sender: { externalId: string }
  body: string
  payloadHash: string
  deliveryKey: string
  occurredAt: string
  attachments?: unknown[]
}

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL
  if (!databaseUrl) throw new Error('DATABASE_URL is required')
  const db = createDatabase({
    databaseUrl,
    neonWsProxy: process.env.NEON_WS_PROXY,
    poolMax: Number(process.env.DB_POOL_MAX ?? 10),
    connectTimeoutMs: 1000,
    queryTimeoutMs: 5000,
    logger: silentLogger,
  })
  await db.query(CREATE_TABLE)
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8')) as EventFields
      db.query<{ id: string }>(
        INSERT.text,
        [
          event.channel,
          event.messageKey,
          event.sender.externalId,
          event.body,
          event.payloadHash,
          event.deliveryKey,
          event.occurredAt,
          JSON.stringify(event.attachments ?? []),
        ],
        { name: INSERT.name },
      ).then(
        (rows) => {
          res.writeHead(rows.length > 0 ? 201 : 200, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ id: rows[0]?.id ?? null }))
        },
        () => res.writeHead(503).end(),
      )
    })
  })
  server.keepAliveTimeout = 30_000
  server.listen(0, '127.0.0.1', () => {
    const address = server.address()
    const port = typeof address === 'object' && address ? address.port : 0
    // Its readiness line: the supervisor (local/processes.ts) waits for it.
    process.stdout.write(`${JSON.stringify({ msg: READY, port })}\n`)
  })
  process.once('SIGTERM', () => server.close(() => process.exit(0)))
}

// Run when started as a program; bench/stack.ts imports READY only.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`raw insert server: ${(err as Error)?.stack ?? String(err)}\n`)
    process.exit(1)
  })
}
