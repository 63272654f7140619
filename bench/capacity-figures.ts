/**
 * The Worker's capacity on the queue path as a run reports it (bench/capacity.ts measures it),
 * and the open-loop rates set from it: every open loop after the measurement runs at a share of it.
 * @module
 */
import { fmt } from './util'

export interface CapacityStep {
  ratePerS: number
  offered: number
  okShare: number
  p50Ms: number
  p99Ms: number
  workerdCpuMsPerEvent: number
  passed: boolean
}

export interface CapacityReport {
  /** The highest rate that passed; 0 when none did. */
  capacityPerS: number
  steps: CapacityStep[]
  /** Whether the last rate tried passed too (then the capacity is at least that, not at most). */
  ceilingFound: boolean
  loadAverage1m: number
}

/**
 * An open-loop rate set from the capacity the run measured: `share` of it, rounded down to tens,
 * within [min, max] (min when nothing was measured or nothing passed).
 */
export function rateFromCapacity(
  capacity: CapacityReport | undefined,
  share: number,
  bounds: { min: number; max?: number },
): number {
  const raw = Math.floor(((capacity?.capacityPerS ?? 0) * share) / 10) * 10
  return Math.min(bounds.max ?? Number.POSITIVE_INFINITY, Math.max(bounds.min, raw))
}

/** The capacity sweep's lines for the report and the progress output. */
export function capacityLines(capacity: CapacityReport): string[] {
  const lines = capacity.steps.map(
    (s) =>
      `capacity | ${fmt(s.ratePerS)}/s offered (${fmt(s.offered)}) | ${fmt(s.okShare * 100, 1)} % 2xx | ` +
      `p50 ${s.p50Ms} ms | p99 ${s.p99Ms} ms from schedule | ${s.workerdCpuMsPerEvent} ms workerd CPU/event | ` +
      `${s.passed ? 'passed' : 'failed'}`,
  )
  const at = capacity.ceilingFound
    ? `${fmt(capacity.capacityPerS)}/s`
    : `at least ${fmt(capacity.capacityPerS)}/s (every rate tried passed)`
  lines.push(
    `capacity | the Worker alone on the queue path (verify + claim + queue send), p99 ≤ 1 s and ≥ 99 % 2xx: ${at} ` +
      `(load average ${capacity.loadAverage1m})`,
  )
  return lines
}
