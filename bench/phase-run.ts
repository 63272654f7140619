/**
 * Runs one phase of the scenario table (bench/scenarios.ts) on a started run, with what it needs
 * around its steps: the Upstash stand-in stopped and restarted for Redis down, the workerd
 * profile taken after the direct baselines and the alternated insert comparison, the cost
 * windows, the decision counters, the connection registry, the overload and queue measurements, `wrangler dev` started and
 * stopped (or skipped when the time budget is short). A phase that fails is reported and the run
 * goes on.
 * @module
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from '../local/stack'
import type { WorkerMiniflareHandle } from '../local/worker-runtime'
import { runAdmission } from './admission'
import { RESULTS_DIR, vendorVars, WORKERD_PROFILE } from './config'
import { connectionsLines } from './connection-figures'
import { measureConnections } from './connections-phase'
import { measureCosts } from './cost'
import { costLines } from './cost-report'
import { measureDecisionCounters } from './decision-counters-phase'
import { insertRatioLine, measureInsertRatio } from './insert-ratio'
import { runOverload } from './overload'
import { type RunState, stepSpec, warmUp } from './phases'
import { describePreVerification, measurePreVerification } from './pre-verification-phase'
import { drainLines, measureQueueDrain } from './queue-drain'
import { replays, signVendorRequests, type VendorEvent } from './requests'
import type { Phase, PhaseName } from './scenarios'
import { fmt, say, startedAt } from './util'

const VERIFY_ONLY_CONFIG = join(REPO_ROOT, 'bench', 'verify-only.wrangler.toml')

/** What the `wrangler dev` section needs beyond its steps (start-up, warm-up), seconds. */
const WRANGLER_DEV_OVERHEAD_S = 20

/** What a phase needs around its steps; `before` answering false skips the phase. */
interface PhaseHooks {
  /** `seen`: the replay set (acknowledged seed events). */
  before?(state: RunState, seen: VendorEvent[]): Promise<boolean>
  /** A measurement of the phase's own after its steps. */
  afterSteps?(state: RunState): Promise<void>
  /** Always, even when the phase failed: what `before` started is stopped. */
  after?(state: RunState): Promise<void>
}

const PHASE_HOOKS: Partial<Record<PhaseName, PhaseHooks>> = {
  'redis-down': {
    async before(state) {
      say('stopping the Upstash stand-in: Redis down')
      await state.stack.redisLayer.stop()
      return true
    },
    async after(state) {
      // Back on the same port (the Worker's UPSTASH_REDIS_REST_URL), for what follows.
      await state.stack.redisLayer.start()
    },
  },
  direct: {
    async afterSteps(state) {
      state.insertRatio = await measureInsertRatio(state)
      const line = insertRatioLine(state.insertRatio)
      say(line)
      state.notes.push(line)
    },
    async after(state) {
      if (state.workerProfiler && state.profileDir) {
        await state.workerProfiler.stop(join(state.profileDir, WORKERD_PROFILE))
        state.workerProfiler = undefined
      }
    },
  },
  cost: {
    async before(state) {
      state.cost = await measureCosts(state)
      for (const line of costLines(state.cost)) {
        say(line)
        state.notes.push(line)
      }
      return false
    },
  },
  'decision-counters': {
    async before(state, seen) {
      state.decisionCounters = await measureDecisionCounters(state.stack.verifyOnlyUrl)
      say('starting two gateways for the counters A/B: counters on, DECISION_FLUSH_SECONDS=0')
      const ab = await state.stack.startCountersAb()
      state.countersAb = ab
      // Warmed on the storm's own traffic, so the first round is not the JIT's.
      const warm = await signVendorRequests(replays(seen, state.run.config.warmupRequests))
      for (const url of [ab.onUrl, ab.offUrl]) await warmUp(state.load, url, warm)
      return true
    },
    async after(state) {
      await state.countersAb?.stop()
      state.countersAb = undefined
    },
  },
  overload: {
    async before(state) {
      state.overload = await runOverload(state)
      writeOverloadJson(state)
      return false
    },
  },
  admission: {
    async before(state) {
      state.admission = await runAdmission(state)
      writeOverloadJson(state)
      return false
    },
  },
  'pre-verification': {
    async before(state) {
      const { local } = state.stack
      state.preVerification = await measurePreVerification(
        (vars) => local.startWorker({ vars }),
        vendorVars(),
      )
      const lines = state.preVerification.map(describePreVerification)
      state.notes.push(...lines.map((line) => `before the signature: ${line}`))
      return false
    },
  },
  connections: {
    async before(state) {
      const { local } = state.stack
      const start = async (vars: Record<string, string>) =>
        (await local.startWorker({
          wranglerConfig: VERIFY_ONLY_CONFIG,
          vars,
        })) as WorkerMiniflareHandle
      state.connections = await measureConnections(start)
      const file = join(RESULTS_DIR, `connections-${state.run.config.runTag}.json`)
      writeFileSync(file, `${JSON.stringify(state.connections, null, 2)}\n`)
      const lines = connectionsLines(state.connections)
      for (const line of lines) say(`connections: ${line}`)
      state.notes.push(...lines.map((line) => `connections: ${line}`))
      return false
    },
  },
  queue: {
    async before(state) {
      state.queueDrain = await measureQueueDrain(state)
      writeOverloadJson(state)
      state.notes.push(...drainLines(state.queueDrain))
      return false
    },
  },
  'wrangler-dev': {
    async before(state) {
      const { config, tally } = state.run
      if (!config.wranglerDev) return false
      const devNeedsS = WRANGLER_DEV_OVERHEAD_S + 2 * (config.durationS + 4)
      const leftS = config.budgetS - (Date.now() - startedAt) / 1000
      if (leftS < devNeedsS) {
        const note =
          `wrangler dev steps skipped: ${fmt(leftS)} s left of the ${config.budgetS} s budget, they need ` +
          `about ${devNeedsS} s (BENCH_BUDGET_S raises it)`
        state.notes.push(note)
        say(note)
        return false
      }
      say('starting wrangler dev (its dev proxy caps throughput; labelled as such)')
      // Stopped after its steps, or with the stack.
      const dev = await state.stack.startWorkerDev((line) => tally.observe(line))
      state.dev = dev
      const warm = await signVendorRequests(state.factory.fresh(config.warmupRequests / 2))
      await warmUp(state.load, dev.url, warm)
      return true
    },
    async after(state) {
      await state.dev?.stop()
      state.dev = undefined
    },
  },
}

/**
 * Runs one phase. A phase that throws (a Worker that would not start on a saturated box, a wait
 * that ran out) ends there and is reported as a problem; its `after` runs all the same, and the run
 * goes on with the next phase.
 */
export async function runPhase(state: RunState, phase: Phase, seen: VendorEvent[]): Promise<void> {
  const hooks = PHASE_HOOKS[phase.name]
  try {
    if (hooks?.before && !(await hooks.before(state, seen))) return
    const concurrencies = phase.at === 'sweep' ? state.run.config.sweep : [state.c50]
    for (const c of concurrencies) {
      for (const scenario of phase.scenarios) {
        await state.step(await stepSpec(state, scenario, c, seen))
      }
    }
    await hooks?.afterSteps?.(state)
  } catch (err) {
    const line = `phase ${phase.name} did not finish: ${(err as Error)?.message ?? String(err)}`
    say(line)
    state.run.problems.push(line)
  } finally {
    await hooks?.after?.(state).catch((err: unknown) => {
      state.run.problems.push(`phase ${phase.name}: its clean-up failed: ${(err as Error).message}`)
    })
  }
}

/** bench/results/overload-{run}.json: the overload, admission and queue phases' figures, as far as run. */
function writeOverloadJson(state: RunState): void {
  const out = { ...state.overload, admission: state.admission, queueDrain: state.queueDrain }
  const file = join(RESULTS_DIR, `overload-${state.run.config.runTag}.json`)
  writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`)
}
