/**
 * What a run does before its phases: every target warmed up (JIT, pools, isolates; the whole-run
 * workerd profile started), Redis measured alone (redis-benchmark), and the seed step: new events
 * once, the replay set the storms resend and the Redis memory sample.
 * @module
 */
import { REDIS_URL } from '../local/services'
import { type RunState, warmUp } from './phases'
import {
  countDedupKeys,
  redisBenchmark,
  sampleKeyMemory,
  usedMemory,
  waitForSettledKeys,
} from './redis'
import type { MemoryReport } from './report'
import { signOriginRequests, signVendorRequests, type VendorEvent } from './requests'
import { stepId, TARGET_LABELS } from './scenarios'
import { fmt, round, say } from './util'
import { WorkerProfiler } from './worker-profiler'

/** The seed step sends its events, or stops after this long (a busy machine is slow). */
const SEED_MAX_S = 8

export async function warmUpAll(state: RunState): Promise<void> {
  const { load, stack, factory } = state
  const { warmupRequests } = state.run.config
  say('warming up the gateway, verify-only worker and origin')
  await warmUp(load, stack.gatewayUrl, await signVendorRequests(factory.fresh(warmupRequests)))
  await warmUp(load, stack.verifyOnlyUrl, await signVendorRequests(factory.fresh(warmupRequests)))
  await warmUp(load, stack.memoGatewayUrl, await signVendorRequests(factory.fresh(warmupRequests)))
  await warmUp(load, stack.origin.url, await signOriginRequests(factory.fresh(warmupRequests / 2)))
  await waitForSettledKeys(state.redis, state.prefix, 10_000)
  // One step's profile (BENCH_PROFILE_STEP) is taken around that step alone (openRun's step).
  state.workerProfiler =
    stack.gatewayInspectorUrl && !state.run.config.profileStep
      ? await WorkerProfiler.start(stack.gatewayInspectorUrl)
      : undefined
}

/** Redis on its own: redis-benchmark straight at it. */
export async function redisAlone(state: RunState) {
  say('redis-benchmark: SET NX PX GET straight at Redis')
  const { config } = state.run
  const result = await redisBenchmark(
    REDIS_URL,
    state.prefix,
    config.redisBenchmarkRequests,
    state.c50,
  )
  say(
    result.status === 'ok'
      ? `redis-benchmark ${fmt(result.rps)} requests/s, p99 ${result.p99} ms`
      : `redis-benchmark ${result.note}`,
  )
  return result
}

/** The replay set (acknowledged new events), and what each key costs in Redis. */
export async function seedReplaySet(
  state: RunState,
): Promise<{ seen: VendorEvent[]; memory: MemoryReport }> {
  const { redis, prefix, c50 } = state
  const { config, problems } = state.run
  const keysBefore = await countDedupKeys(redis, prefix)
  const usedBefore = await usedMemory(redis)
  const seedEvents = state.factory.fresh(config.seedEvents)
  const seed = await state.step({
    id: 'seed',
    scenario: `seed: first-seen (≤ ${fmt(config.seedEvents)} events, ≤ ${SEED_MAX_S} s)`,
    kind: 'scenario',
    target: TARGET_LABELS.gateway,
    url: state.stack.gatewayUrl,
    concurrency: c50,
    requests: await signVendorRequests(seedEvents),
    events: seedEvents,
    fresh: 'all',
    baselineId: stepId('origin-insert', c50),
    durationS: SEED_MAX_S,
  })
  const stillInflight = await waitForSettledKeys(redis, prefix, 10_000)
  if (stillInflight > 0) problems.push(`${stillInflight} seed keys still inflight after 10 s`)
  const usedAfter = await usedMemory(redis)
  const keysCreated = (await countDedupKeys(redis, prefix)) - keysBefore
  const seen = seedEvents.filter((_, i) => {
    const status = seed.statuses[i] ?? 0
    return status >= 200 && status < 300
  })
  // Only acknowledged events are "already seen"; a machine too busy to take half is no benchmark.
  if (seen.length < 100) {
    throw new Error(
      `only ${seen.length} seed events were acknowledged: no replay set to storm with`,
    )
  }
  const memory: MemoryReport = {
    sample: await sampleKeyMemory(redis, prefix, config.memorySampleKeys),
    keysCreated,
    usedMemoryBefore: usedBefore,
    usedMemoryAfter: usedAfter,
    bytesPerKeyInfo: round((usedAfter - usedBefore) / Math.max(1, keysCreated), 1),
  }
  say(
    `Redis: ${fmt(memory.sample.production.avgBytes, 1)} B/key (MEMORY USAGE, production key ` +
      `names; ${fmt(memory.sample.avgBytes, 1)} with the bench prefix), ` +
      `${fmt(memory.bytesPerKeyInfo, 1)} B/key (INFO used_memory over ${fmt(keysCreated)} keys)`,
  )
  return { seen, memory }
}
