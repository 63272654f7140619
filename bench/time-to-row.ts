/**
 * How long from a vendor's send to its row: new Slack events sent one at a time at a trickle
 * (TRICKLE_PER_S), the worst case for a queue batch (nothing else to fill it), each timed from its
 * send to its row's `created_at` (Postgres's clock, the same machine's). Inline, a row is written
 * before the answer; queued first, it waits for the consumer's batch (`max_batch_timeout`).
 * @module
 */
import type { WorkerRun } from '../local/stack'
import { waitForRows } from './landed'
import { signVendorRequest } from './requests'
import type { RunDeps } from './run-deps'
import { summarize } from './stats'
import { sleep } from './util'

const EVENTS = 40
const TRICKLE_PER_S = 10

export interface TimeToRow {
  events: number
  /** Rows found (each event answered 2xx and waited for, at most 60 s). */
  rows: number
  /** From the send to the answer, ms. */
  answerP50Ms: number
  /** From the send to the row, ms. */
  p50Ms: number
  p99Ms: number
  maxMs: number
}

export async function timeToRow(deps: RunDeps, gateway: WorkerRun): Promise<TimeToRow> {
  const events = deps.factory.freshSlack(EVENTS)
  const sentAt = new Map<string, number>()
  const answerMs: number[] = []
  for (const event of events) {
    const wire = await signVendorRequest(event)
    const started = Date.now()
    sentAt.set(event.messageKey, started)
    const response = await fetch(`${gateway.url}${wire.path}`, {
      method: 'POST',
      headers: wire.headers,
      body: wire.body,
      signal: AbortSignal.timeout(10_000),
    }).catch(() => null)
    await response?.arrayBuffer()
    answerMs.push(Date.now() - started)
    await sleep(Math.max(0, 1_000 / TRICKLE_PER_S - (Date.now() - started)))
  }
  const landed = await waitForRows(deps, events, 60)
  const { rows } = await deps.stack.local.sql.query<{ key: string; at: number }>(
    `SELECT channel_message_id AS key, (extract(epoch FROM created_at) * 1000)::float8 AS at
       FROM messages WHERE channel = 'slack' AND channel_message_id = ANY($1::text[])`,
    [events.map((e) => e.messageKey)],
  )
  const toRow = summarize(rows.map((row) => row.at - (sentAt.get(row.key) ?? row.at)))
  return {
    events: EVENTS,
    rows: landed,
    answerP50Ms: summarize(answerMs).p50,
    p50Ms: toRow.p50,
    p99Ms: toRow.p99,
    maxMs: toRow.max,
  }
}
