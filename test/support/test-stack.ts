/**
 * The end-to-end tests' stack (local/stack.ts) on the shared servers, and what they look at after
 * sending the fixtures' deliveries (local/vendor-deliveries.ts) through it: the Worker's answer,
 * the rows a delivery made and its claim in Redis, found by the keys the fixture knows.
 * @module
 */
import type pg from 'pg'
import { runId } from '../../local/services'
import { type Stack, startStack } from '../../local/stack'
import { type SignedDelivery, TEST_SECRETS, vendorBindings } from '../../local/vendor-deliveries'

export interface TestStack {
  stack: Stack
  /** One attempt of the delivery, to the Worker: its status. */
  deliver(delivery: SignedDelivery): Promise<number>
  /** Message rows of the delivery's message. */
  rows(key: RowKey): Promise<number>
  outbox(key: RowKey): ReturnType<typeof outboxRows>
  /** The delivery's claim in Redis, null when there is none. */
  claim(delivery: { deliveryKey: string }): Promise<string | null>
  stop(): Promise<void>
}

export interface TestStackOptions {
  /** Origin settings on top of LOG_LEVEL=warn. */
  originEnv?: Record<string, string>
  balancer?: boolean
  /** Worker bindings on top of the test vendor secrets. */
  workerVars?: Record<string, string>
  onWorkerLine?: (line: string) => void
  /** The origin reads the Worker's Redis too (the Gmail poller, the console's lookup). */
  originsUseRedis?: boolean
}

/**
 * A fresh migrated database, a key prefix of its own (`test:{label}:…`), one origin and the
 * Worker in Miniflare, configured with the fixtures' test secrets.
 */
export async function startTestStack(
  label: string,
  options: TestStackOptions = {},
): Promise<TestStack> {
  const stack = await startStack({
    postgres: 'fresh',
    redis: 'shared',
    keyPrefix: `test:${label}:${runId()}:`,
    originSecret: TEST_SECRETS.origin,
    originEnv: { LOG_LEVEL: 'warn', ...options.originEnv },
    balancer: options.balancer,
    originsUseRedis: options.originsUseRedis,
    worker: {
      vars: { ...vendorBindings(), ...options.workerVars },
      ...(options.onWorkerLine ? { onLine: options.onWorkerLine } : {}),
    },
  })
  return {
    stack,
    deliver: async (delivery) => send(await delivery.request(stack.worker.url)),
    rows: (key) => messageRows(stack.sql, key),
    outbox: (key) => outboxRows(stack.sql, key),
    claim: (delivery) => stack.redisClient.get(`${stack.keyPrefix}${delivery.deliveryKey}`),
    stop: () => stack.stop(),
  }
}

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
