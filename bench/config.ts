/**
 * What one `npm run bench` does, in numbers: step length, concurrencies, pool sizes. The defaults
 * keep the whole run within 20 minutes on a shared 2-core machine (docs/benchmark.md); a few can be
 * changed from the environment for a longer or a quicker look (`BENCH_DURATION_S=3 npm run bench`).
 * @module
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { REPO_ROOT } from '../local/stack'
import { vendorBindings } from '../local/vendor-deliveries'

/** Where a run writes latest.{json,md}, chart.svg and (BENCH_PROFILE=1) profiles/<run>/. */
export const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results')
/** The gateway's workerd CPU profile, next to the origin's in profiles/<run>/. */
export const WORKERD_PROFILE = 'workerd-gateway.cpuprofile'

export interface BenchConfig {
  /** Seconds each measured step runs. `BENCH_DURATION_S` @default 5 */
  durationS: number
  /** The concurrency sweep (chart). `BENCH_SWEEP` @default [10, 50, 100] */
  sweep: number[]
  /** Concurrency of the single-point scenarios and the targets. @default 50 */
  headlineConcurrency: number
  /**
   * Upper bound on requests per step (also the number of requests signed for it). Sized so a step
   * that runs at 4,000 requests/s for the whole duration still does not run out.
   * `BENCH_MAX_REQUESTS` @default 4000 × duration
   */
  maxRequestsPerStep: number
  /**
   * Distinct events sent once before the storms (the replay set; also the memory sample), at most:
   * the seed step stops after 8 s. `BENCH_SEED_EVENTS` @default 3000
   */
  seedEvents: number
  /** Keys read with `MEMORY USAGE`. */
  memorySampleKeys: number
  /** `redis-benchmark -n`. */
  redisBenchmarkRequests: number
  /** Requests per warm-up of each target (JIT, connection pools, isolate start). */
  warmupRequests: number
  /**
   * Seconds the whole run should stay within; the optional `wrangler dev` section is skipped
   * (and says so) when too little is left. `BENCH_BUDGET_S` @default 1200
   */
  budgetS: number
  /**
   * The open-loop Slack backfill's rate, events/s. `BENCH_BACKFILL_RATE` @default null: the
   * capacity the run measured first (bench/capacity.ts)
   */
  backfillRatePerS: number | null
  /** ... and how long it sends. `BENCH_BACKFILL_S` @default 30 */
  backfillDurationS: number
  /** Run `wrangler dev` steps. `BENCH_WRANGLER_DEV=0` skips them. @default true */
  wranglerDev: boolean
  /**
   * CPU profiles of the origin (V8 profiler preload) and of the gateway in workerd (inspector);
   * kept in bench/results/profiles/<run>/, summarized in the report. `BENCH_PROFILE=1` @default false
   */
  profile: boolean
  /**
   * Only the gateway's workerd profile, and of this one step (e.g. `duplicate-storm@50`) instead
   * of the whole run: where one scenario's CPU goes. Implies `profile`. `BENCH_PROFILE_STEP`
   */
  profileStep: string | null
  /**
   * The phases of bench/scenarios.ts to run (comma-separated names, e.g. `sweep`); the others are
   * skipped and the run says so. `BENCH_PHASES` @default every phase
   */
  phases: string[] | null
  /** The origin's LOG_LEVEL (production default is info: one line per event). */
  originLogLevel: string
  /** Unique per run: Redis key prefix, database name, event ids. */
  runTag: string
}

function intFromEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer in [${min}, ${max}]`)
  }
  return value
}

function sweepFromEnv(): number[] {
  const raw = process.env.BENCH_SWEEP
  if (!raw) return [10, 50, 100]
  const values = raw.split(',').map((s) => Number(s.trim()))
  if (values.some((n) => !Number.isInteger(n) || n < 1 || n > 500)) {
    throw new Error('BENCH_SWEEP must be a comma-separated list of integers in [1, 500]')
  }
  return values
}

function listFromEnv(name: string): string[] | null {
  const raw = process.env[name]?.trim()
  return raw ? raw.split(',').map((s) => s.trim()) : null
}

export function loadBenchConfig(): BenchConfig {
  const durationS = intFromEnv('BENCH_DURATION_S', 5, 1, 60)
  const sweep = sweepFromEnv()
  return {
    durationS,
    sweep,
    headlineConcurrency: 50,
    maxRequestsPerStep: intFromEnv('BENCH_MAX_REQUESTS', 4_000 * durationS, 500, 500_000),
    seedEvents: intFromEnv('BENCH_SEED_EVENTS', 3_000, 300, 100_000),
    memorySampleKeys: 50,
    redisBenchmarkRequests: 50_000,
    warmupRequests: 600,
    budgetS: intFromEnv('BENCH_BUDGET_S', 1_200, 30, 3_600),
    backfillRatePerS: process.env.BENCH_BACKFILL_RATE
      ? intFromEnv('BENCH_BACKFILL_RATE', 0, 10, 20_000)
      : null,
    backfillDurationS: intFromEnv('BENCH_BACKFILL_S', 30, 1, 600),
    wranglerDev: process.env.BENCH_WRANGLER_DEV !== '0',
    profile: process.env.BENCH_PROFILE === '1' || Boolean(process.env.BENCH_PROFILE_STEP),
    profileStep: process.env.BENCH_PROFILE_STEP?.trim() || null,
    phases: listFromEnv('BENCH_PHASES'),
    originLogLevel: process.env.BENCH_ORIGIN_LOG_LEVEL || 'info',
    runTag: `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`,
  }
}

/**
 * Secrets of the benchmark's own stack (nothing outside this run accepts them). Twilio signs the
 * public URL, so one pre-signed request is valid on every worker, whatever port it listens on.
 */
export const BENCH_SECRETS = {
  slack: 'bench-slack-signing-secret',
  twilio: 'bench-twilio-auth-token',
  telegram: 'bench-telegram-secret-token',
  telegramBotId: '777000111',
  origin: 'bench-origin-shared-secret',
  upstash: 'bench-upstash-token',
  publicBaseUrl: 'https://gateway.bench.invalid',
} as const

/** The Worker bindings every bench worker gets (the stack adds ORIGIN_URL and the Redis wiring). */
export function vendorVars(): Record<string, string> {
  return { ...vendorBindings(BENCH_SECRETS), PUBLIC_BASE_URL: BENCH_SECRETS.publicBaseUrl }
}
