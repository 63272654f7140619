/**
 * What the end-to-end tests look at after sending deliveries through a stack (local/stack.ts):
 * the Worker's answer, and the rows a delivery made, found by the keys the fixture knows.
 * @module
 */
import type pg from 'pg'

/** Where a delivery's row is: its channel and message key (local/vendor-deliveries.ts). */
export interface RowKey {
  channel: string
  messageKey: string
}

/** Sends a request to the Worker and returns its status (the body read to the end; bounded). */
export async function send(request: Request): Promise<number> {
  const response = await fetch(request, { signal: AbortSignal.timeout(30_000) })
  await response.arrayBuffer()
  return response.status
}

export async function messageRows(sql: pg.Pool, key: RowKey): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM messages WHERE channel = $1 AND channel_message_id = $2',
    [key.channel, key.messageKey],
  )
  return rows[0]?.n ?? 0
}

/** The outbox items of a delivery's message, and whether the relay has handed them on. */
export async function outboxRows(
  sql: pg.Pool,
  key: RowKey,
): Promise<Array<{ id: string; processed: boolean }>> {
  const { rows } = await sql.query<{ id: string; processed: boolean }>(
    `SELECT o.id::text, o.processed_at IS NOT NULL AS processed
       FROM outbox o JOIN messages m ON m.id = o.message_id
      WHERE m.channel = $1 AND m.channel_message_id = $2`,
    [key.channel, key.messageKey],
  )
  return rows
}

/** Polls (bounded) until `check` holds: a queue consumer or a relay runs on its own. */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 200))
  }
}
