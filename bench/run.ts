/**
 * `npm run bench`: how fast the gateway is, at what cost, against what baseline, on this machine.
 *
 * Starts the local stack (local/stack.ts: a fresh Postgres database behind the Neon proxy, the
 * Upstash stand-in on the real Redis under a unique key prefix, the origin process, the Worker
 * bundle in Miniflare), plus the verify-only baseline Worker and a load generator process, then
 * warm-up → redis-benchmark (SET NX PX GET) → seed (the replay set and the Redis memory sample) →
 * the phases of bench/scenarios.ts in order (its module comment lists them), the Worker's
 * capacity first when a phase sets its open-loop rates from it.
 *
 * The scenarios are a table (bench/scenarios.ts), run by bench/runner.ts on the stack of
 * bench/stack.ts; this file is the entry: settings, signals, cleanup, results and the summary.
 *
 * Writes bench/results/latest.{json,md} and chart.svg, prints the table and the targets, drops the
 * database, deletes the key prefix, stops every process. Exit code 1 only for a real failure: the
 * harness could not run or a phase of it failed, a correctness check failed (a 2xx event without
 * its row, a replay that made a row, an unaccounted request), or cleanup failed. Targets not
 * reached, and steps that did not finish (an open loop whose target was still answering at its
 * deadline), are reported, not failures; the run goes on past them.
 *
 * Settings (bench/config.ts and docs/benchmark.md): BENCH_DURATION_S, BENCH_SWEEP, BENCH_PHASES,
 * BENCH_BACKFILL_RATE, BENCH_BACKFILL_S, BENCH_BUDGET_S, BENCH_WRANGLER_DEV=0, BENCH_PROFILE=1,
 * BENCH_PROFILE_STEP, BENCH_MAX_REQUESTS, BENCH_SEED_EVENTS, BENCH_ORIGIN_LOG_LEVEL, REDIS_URL,
 * DATABASE_URL (admin connection; a fresh database is created next to it).
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { renderChart } from './chart'
import { Cleanup } from './cleanup'
import { type BenchConfig, loadBenchConfig, RESULTS_DIR, WORKERD_PROFILE } from './config'
import { captureConsoleLines, LogTally } from './logs'
import { largestProfile, summarizeProfile } from './profile'
import {
  type BenchReport,
  countersAbLine,
  cpuTable,
  decisionCountersLine,
  machineInfo,
  markdown,
  resultsTable,
} from './report'
import { bench } from './runner'
import type { StepResult } from './steps'
import { targetsList } from './targets'
import { round, say, startedAt } from './util'

function chartFor(report: BenchReport, config: BenchConfig): string {
  const series = (id: string, label: string, color: string, dashed = false) => {
    const points = config.sweep
      .map((c) => report.steps.find((s) => s.id === `${id}@${c}`))
      .filter((s): s is StepResult => s !== undefined)
    return {
      label,
      color,
      dashed,
      throughput: points.map((s) => [s.concurrency, s.eventsPerS] as [number, number]),
      p99: points.map((s) => [s.concurrency, s.latency.p99] as [number, number]),
    }
  }
  const m = report.machine
  return renderChart({
    title: 'inbound-dedup gateway: throughput and p99 against concurrency',
    subtitle: `${m.nproc} cores, ${m.cpuModel}, Node ${m.node}, ${m.date.slice(0, 10)}; load avg at start ${m.loadAverageStart[0]}`,
    concurrencies: config.sweep,
    series: [
      series('first-seen', 'first-seen (gateway)', '#1f77b4'),
      series('duplicate-storm', 'duplicate storm (gateway)', '#ff7f0e'),
      series('verify-only', 'verify-only baseline', '#7f7f7f', true),
    ],
  })
}

function writeResults(report: BenchReport, config: BenchConfig): void {
  mkdirSync(RESULTS_DIR, { recursive: true })
  writeFileSync(join(RESULTS_DIR, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`)
  writeFileSync(join(RESULTS_DIR, 'latest.md'), markdown(report, config.headlineConcurrency))
  writeFileSync(join(RESULTS_DIR, 'chart.svg'), chartFor(report, config))
}

async function main(): Promise<number> {
  const config = loadBenchConfig()
  const machine = machineInfo()
  const tally = new LogTally()
  const cleanup = new Cleanup()
  const problems: string[] = []
  // workerd's output reaches this process as console.log lines: count them, do not print them.
  const restoreConsole = captureConsoleLines((line) => tally.observe(line))
  let interrupted = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) process.exit(130)
    interrupted = true
    say(`${signal}: cleaning up (again to quit at once)`)
    void cleanup.runAll(problems).finally(() => process.exit(130))
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)

  let report: BenchReport | undefined
  let failure: unknown
  try {
    report = await bench({ config, machine, tally, cleanup, problems, onSignal })
  } catch (err) {
    failure = err
  }
  if (!interrupted) say('cleaning up: processes, database, Redis keys')
  await cleanup.runAll(problems)
  restoreConsole()
  if (interrupted) {
    for (const problem of problems) process.stderr.write(`- ${problem}\n`)
    return 130
  }
  if (failure !== undefined || !report) {
    process.stderr.write(`\nbench FAILED: ${(failure as Error)?.stack ?? String(failure)}\n`)
    for (const problem of problems) process.stderr.write(`- ${problem}\n`)
    return 1
  }

  machine.loadAverageEnd = loadavg().map((l) => round(l, 2))
  report.elapsedS = round((Date.now() - startedAt) / 1000, 0)
  if (config.profile) {
    const dir = join(RESULTS_DIR, 'profiles', config.runTag)
    const origin = largestProfile(dir, (name) => name !== WORKERD_PROFILE)
    const workerd = largestProfile(dir, (name) => name === WORKERD_PROFILE)
    report.profiles = [
      ...(origin ? [{ label: 'origin (Node)', ...summarizeProfile(origin) }] : []),
      ...(workerd ? [{ label: 'gateway (workerd)', ...summarizeProfile(workerd) }] : []),
    ]
    if (!origin) problems.push('BENCH_PROFILE=1 but the origin wrote no .cpuprofile')
    if (!workerd) problems.push('BENCH_PROFILE=1 but no workerd profile was taken')
  }
  writeResults(report, config)

  const failed = report.checks.filter((c) => !c.ok)
  process.stdout.write(
    [
      '',
      `Machine: ${machine.nproc} cores, ${machine.cpuModel}, Node ${machine.node}, ${machine.date}`,
      `Load average at start ${machine.loadAverageStart.join(' / ')}, at end ${machine.loadAverageEnd.join(' / ')}`,
      '',
      resultsTable(report),
      '',
      'Targets:',
      targetsList(report.targets),
      ...(report.overload || report.queueDrain || report.admission
        ? ['', 'Overload targets:', targetsList(report.overloadTargets)]
        : []),
      '',
      `CPU ms per 1,000 requests (c=${config.headlineConcurrency}):`,
      cpuTable(report, config.headlineConcurrency),
      '',
      decisionCountersLine(report, config.headlineConcurrency),
      countersAbLine(report, config.headlineConcurrency),
      '',
      failed.length === 0
        ? `Correctness: all ${report.checks.length} checks passed.`
        : `Correctness: ${failed.length} FAILED:\n${failed.map((c) => `- ${c.step}: ${c.name}: ${c.detail}`).join('\n')}`,
      ...(report.notes.length ? ['', 'Notes:', ...report.notes.map((n) => `- ${n}`)] : []),
      ...(problems.length ? ['', 'Problems:', ...problems.map((p) => `- ${p}`)] : []),
      '',
      `Wrote bench/results/latest.json, latest.md, chart.svg in ${report.elapsedS} s.`,
      '',
    ].join('\n'),
  )
  return failed.length > 0 || problems.length > 0 ? 1 : 0
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench crashed: ${(err as Error)?.stack ?? String(err)}\n`)
    process.exit(1)
  },
)
