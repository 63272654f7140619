/**
 * The admission phase: the Worker offered twice what it can verify (worker/admission.ts). An
 * open-loop Slack backfill at 2× the queue path's capacity measured first in the run
 * (bench/capacity.ts: the Worker alone, no origin in the way), against a gateway on that path
 * (bench/queue-path-worker.ts), in the modes of BENCH_ADMISSION_MODES (default `default,sized,off`):
 * the Worker's defaults (the bound that drops while the isolate is behind its delay target,
 * worker/admission-limit.ts; BENCH_ADMISSION_TARGET_MS sets the target), `count` (MAX_IN_FLIGHT
 * 256 alone, the target off), the bound sized for this machine (what it holds in flight at its
 * capacity with 50 ms per answer; BENCH_ADMISSION_MAX_IN_FLIGHT, BENCH_ADMISSION_WAIT_MS
 * override), and none (MAX_IN_FLIGHT=0). Per mode: the share answered within 3 s with a 2xx or a 503 (Slack retries a 503),
 * the requests never answered, the 503 share, p50 / p99 from each request's scheduled time; then
 * the queue released and every 2xx checked to be exactly one row, and every refused one none.
 * @module
 */
import { measureCapacity } from './capacity'
import { rateFromCapacity } from './capacity-figures'
import { isOk, rowCount, sendSlackBackfill, waitForRows } from './landed'
import { startQueuePathWorker } from './queue-path-worker'
import type { RunDeps } from './run-deps'
import { startSlowProxy } from './slow-proxy'
import { summarize } from './stats'
import type { Check } from './step-rows'
import { notMeasured, type Target } from './targets'
import { fmt, round, say } from './util'

/** Seconds of load per mode (BENCH_ADMISSION_S). */
const DURATION_S = Number(process.env.BENCH_ADMISSION_S ?? 10)
/** The offered rate as a multiple of the capacity. */
const OVER = 2
const DEADLINE_MS = 3_000
/** The goal: at least this share answered (2xx or 503) within DEADLINE_MS. */
const GOAL_SHARE = 0.99
/** How long the released queue is waited for until every 2xx is a row. */
const DRAIN_MAX_S = 120

interface Mode {
  name: string
  vars: Record<string, string>
}

/**
 * The bound for this machine: what the Worker holds in flight at its capacity when each answer
 * takes ANSWER_S (Little's law: the capacity sweep's p50 near its top rate is tens of ms), at least
 * MIN_BOUND; BENCH_ADMISSION_MAX_IN_FLIGHT overrides. A bound only helps if it binds before
 * workerd's one thread is saturated: sized for the deadline instead (capacity × seconds), it is
 * reached only once every answer is already late.
 */
const ANSWER_S = 0.05
const MIN_BOUND = 8

function modes(capacityPerS: number): Mode[] {
  const bound =
    process.env.BENCH_ADMISSION_MAX_IN_FLIGHT ??
    String(Math.max(MIN_BOUND, Math.round(capacityPerS * ANSWER_S)))
  const wait = process.env.BENCH_ADMISSION_WAIT_MS
  const sized = { MAX_IN_FLIGHT: bound, ...(wait ? { ADMISSION_WAIT_MS: wait } : {}) }
  const target = process.env.BENCH_ADMISSION_TARGET_MS
  const targeted: Record<string, string> = target ? { ADMISSION_TARGET_MS: target } : {}
  const all = {
    default: {
      name: `admission on, the default (MAX_IN_FLIGHT 256, ADMISSION_TARGET_MS ${target ?? '100'})`,
      vars: targeted,
    },
    count: {
      name: 'admission on, MAX_IN_FLIGHT=256 alone (ADMISSION_TARGET_MS=0)',
      vars: { ADMISSION_TARGET_MS: '0' },
    },
    sized: { name: `admission on, MAX_IN_FLIGHT=${bound}`, vars: { ...sized, ...targeted } },
    off: { name: 'admission off, MAX_IN_FLIGHT=0', vars: { MAX_IN_FLIGHT: '0' } },
  }
  const chosen = (process.env.BENCH_ADMISSION_MODES ?? 'default,sized,off').split(',')
  return chosen.map((name) => {
    const mode = all[name.trim() as keyof typeof all]
    if (!mode)
      throw new Error('BENCH_ADMISSION_MODES: a comma-separated list of default, count, sized, off')
    return mode
  })
}

export interface AdmissionModeResult {
  mode: string
  offered: number
  /** 2xx or 503 within DEADLINE_MS of its scheduled time, ÷ offered. */
  answeredInTimeShare: number
  /** No answer at all (cut at the loop's deadline, a socket error, a timeout). */
  unanswered: number
  /** Of those: socket errors (a reset, or a timeout at 10 s), and the timeouts among them. */
  errors: number
  timeouts: number
  /** The errors by code. */
  errorCodes: Record<string, number>
  share503: number
  /** Answers other than 2xx and 503. */
  other: number
  p50Ms: number
  p99Ms: number
  maxBacklog: number
  acknowledged: number
  /** Rows of the 2xx events ÷ their count, once the queue drained (1: each exactly one). */
  rowsPer2xx: number
  missing: number
  /** Rows of events answered other than 2xx (refused before any claim: none expected). */
  rowsOfRefused: number
}

export interface AdmissionReport {
  capacityPerS: number
  ratePerS: number
  durationS: number
  modes: AdmissionModeResult[]
}

export async function runAdmission(state: RunDeps): Promise<AdmissionReport> {
  const capacity = state.capacity ?? (await measureCapacity(state))
  if (!capacity || capacity.capacityPerS === 0) {
    throw new Error('no capacity measured: the admission rate is set from it')
  }
  const ratePerS = rateFromCapacity(capacity, OVER, { min: 20 })
  say(
    `admission: ${ratePerS}/s (${OVER}× the capacity ${capacity.capacityPerS}/s) for ${DURATION_S} s`,
  )
  const results: AdmissionModeResult[] = []
  for (const mode of modes(capacity.capacityPerS)) {
    const result = await runMode(state, mode, ratePerS)
    results.push(result)
    say(admissionLine(result))
  }
  const report = {
    capacityPerS: capacity.capacityPerS,
    ratePerS,
    durationS: DURATION_S,
    modes: results,
  }
  state.notes.push(...admissionLines(report))
  return report
}

async function runMode(state: RunDeps, mode: Mode, ratePerS: number): Promise<AdmissionModeResult> {
  const proxy = await startSlowProxy(state.stack.origin.url, { concurrency: 1_000, delayMs: 0 })
  try {
    const { worker, warmQueued } = await startQueuePathWorker(state, proxy, {
      vars: mode.vars,
      queueConsumers: { max_batch_size: 100, max_batch_timeout: 0 },
    })
    try {
      const { events, result } = await sendSlackBackfill(state, worker.url, {
        ratePerS,
        count: ratePerS * DURATION_S,
        timeoutS: 10,
      })
      const answerMs = result.openLoop?.answerMs ?? []
      const status = (i: number) => result.statuses[i] ?? 0
      const answered = (i: number) => (answerMs[i] ?? -1) >= 0 && status(i) !== 0
      const kept = (i: number) => isOk(status(i)) || status(i) === 503
      let inTime = 0
      let unanswered = 0
      let refused503 = 0
      let other = 0
      for (let i = 0; i < events.length; i++) {
        if (!answered(i)) unanswered++
        else if (!kept(i)) other++
        else if ((answerMs[i] ?? -1) <= DEADLINE_MS) inTime++
        if (status(i) === 503) refused503++
      }
      const acknowledged = events.filter((_, i) => isOk(status(i)))
      // Answered, not 2xx: refused before any claim (or released). A request cut off unanswered
      // may still land: the vendor's retry of it is then a duplicate.
      const notAcknowledged = events.filter((_, i) => answered(i) && !isOk(status(i)))
      proxy.release()
      const landed = await waitForRows(state, [...warmQueued, ...acknowledged], DRAIN_MAX_S)
      const latency = summarize(answerMs.filter((ms, i) => ms >= 0 && answered(i)))
      return {
        mode: mode.name,
        offered: events.length,
        answeredInTimeShare: round(inTime / Math.max(events.length, 1), 4),
        unanswered,
        errors: result.errors,
        timeouts: result.timeouts,
        errorCodes: result.openLoop?.errorCodes ?? {},
        share503: round(refused503 / Math.max(events.length, 1), 4),
        other,
        p50Ms: round(latency.p50, 0),
        p99Ms: round(latency.p99, 0),
        maxBacklog: result.openLoop?.maxBacklog ?? 0,
        acknowledged: acknowledged.length,
        rowsPer2xx: round(landed / Math.max(warmQueued.length + acknowledged.length, 1), 4),
        missing: warmQueued.length + acknowledged.length - landed,
        rowsOfRefused: await rowCount(state, notAcknowledged),
      }
    } finally {
      await worker.stop()
    }
  } finally {
    await proxy.close()
  }
}

/** Whether a mode met the goal: ≥ 99 % answered in time, none unanswered, each 2xx one row. */
export function admissionMet(m: AdmissionModeResult): boolean {
  return (
    m.answeredInTimeShare >= GOAL_SHARE &&
    m.unanswered === 0 &&
    m.missing === 0 &&
    m.rowsPer2xx === 1 &&
    m.rowsOfRefused === 0
  )
}

function codesOf(m: AdmissionModeResult): string {
  const codes = Object.entries(m.errorCodes).map(([code, n]) => `${code} ${fmt(n)}`)
  return codes.length > 0 ? `: ${codes.join(', ')}` : ''
}

function admissionLine(m: AdmissionModeResult): string {
  return (
    `admission | ${m.mode} | ${fmt(m.answeredInTimeShare * 100, 1)} % answered (2xx or 503) within 3 s | ` +
    `${fmt(m.unanswered)} unanswered (${fmt(m.errors)} errors${codesOf(m)}, ${fmt(m.timeouts)} timeouts) | ${fmt(m.share503 * 100, 1)} % 503 | ${fmt(m.other)} other | ` +
    `p50 ${m.p50Ms} ms, p99 ${m.p99Ms} ms | backlog ≤ ${fmt(m.maxBacklog)} | ` +
    `${fmt(m.acknowledged)} 2xx, rows/2xx ${m.rowsPer2xx}, ${m.missing} missing, ` +
    `${m.rowsOfRefused} rows of refused | ${admissionMet(m) ? 'goal met' : 'goal NOT met'}`
  )
}

export function admissionLines(report: AdmissionReport): string[] {
  return [
    `admission | ${fmt(report.ratePerS)}/s offered for ${report.durationS} s = ${OVER}× the queue path's capacity ${fmt(report.capacityPerS)}/s`,
    ...report.modes.map(admissionLine),
  ]
}

const GOAL = `admission: at ${OVER}× the Worker's capacity, ≥ 99 % answered (2xx or 503) within 3 s, none unanswered, each 2xx one row`

/** The goal, judged on the first mode (the Worker's defaults, unless BENCH_ADMISSION_MODES says else). */
export function admissionTargets(report: AdmissionReport | undefined): Target[] {
  const on = report?.modes[0]
  if (!report || !on) return [notMeasured(GOAL)]
  return [
    {
      name: GOAL,
      met: admissionMet(on),
      detail:
        `${fmt(on.answeredInTimeShare * 100, 1)} % in time, ${fmt(on.unanswered)} unanswered, ` +
        `${fmt(on.share503 * 100, 1)} % 503, rows/2xx ${on.rowsPer2xx} (${fmt(report.ratePerS)}/s)`,
    },
  ]
}

/** Correctness in every mode: each 2xx exactly one row, no row for an event refused. */
export function admissionChecks(
  report: AdmissionReport | undefined,
): Array<Check & { step: string }> {
  return (report?.modes ?? []).flatMap((m) => [
    {
      step: `admission: ${m.mode}`,
      name: 'every 2xx is exactly one row',
      ok: m.missing === 0 && m.rowsPer2xx === 1,
      detail: `${fmt(m.acknowledged)} 2xx, rows/2xx ${m.rowsPer2xx}, ${m.missing} missing`,
    },
    {
      step: `admission: ${m.mode}`,
      name: 'no row for an event answered other than 2xx',
      ok: m.rowsOfRefused === 0,
      detail: `${m.rowsOfRefused} rows`,
    },
  ])
}
