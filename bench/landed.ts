/**
 * What the overload and queue benches share: a Slack backfill sent open loop, then what they read
 * after it: which acknowledged events are rows yet (each key is at most one row: the unique
 * index), and the CPU a set of processes used.
 * @module
 */
import { readStat } from '../local/proc'
import type { LoadResult } from './load'
import { signVendorRequests, type VendorEvent } from './requests'
import type { RunDeps } from './run-deps'
import { sleep } from './util'

/** `count` new Slack events sent to `url` at `ratePerS` whatever the answers (bench/open-loop.ts). */
export async function sendSlackBackfill(
  state: RunDeps,
  url: string,
  load: { ratePerS: number; count: number; timeoutS: number },
): Promise<{ events: VendorEvent[]; result: LoadResult }> {
  const events = state.factory.freshSlack(load.count)
  const requests = await signVendorRequests(events)
  const result = await state.load.run({
    url,
    requests,
    connections: 0,
    durationS: load.count / load.ratePerS,
    timeoutS: load.timeoutS,
    openLoop: { ratePerS: load.ratePerS },
  })
  return { events, result }
}

/** A 2xx answer. */
export const isOk = (status: number | undefined) =>
  status !== undefined && status >= 200 && status < 300

/** CPU milliseconds (user + system) of these processes so far (ticks of 1/100 s on Linux). */
export function cpuMsOf(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + (readStat(pid)?.ticks ?? 0), 0) * 10
}

/** Rows holding these events' keys. */
export async function rowCount(state: RunDeps, events: readonly VendorEvent[]): Promise<number> {
  if (events.length === 0) return 0
  const { rows } = await state.stack.local.sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM messages
      WHERE channel = 'slack' AND channel_message_id = ANY($1::text[])`,
    [events.map((e) => e.messageKey)],
  )
  return rows[0]?.n ?? 0
}

/** Waits until every event is a row (or `maxS`), polling every `pollMs`; returns how many are. */
export async function waitForRows(
  state: RunDeps,
  events: readonly VendorEvent[],
  maxS: number,
  pollMs = 250,
): Promise<number> {
  const until = Date.now() + maxS * 1000
  for (;;) {
    const n = await rowCount(state, events)
    if (n >= events.length || Date.now() > until) return n
    await sleep(pollMs)
  }
}
