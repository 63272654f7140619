/**
 * Latency summaries from every recorded response time (exact percentiles, no histogram buckets:
 * a step has at most a few tens of thousands of samples).
 * @module
 */

export interface LatencySummary {
  count: number
  /** Milliseconds. */
  mean: number
  p50: number
  p95: number
  p99: number
  max: number
}

/** Nearest-rank percentile of sorted values; 0 when there are none. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? 0
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(samples).sort()
  let total = 0
  for (const value of sorted) total += value
  const round = (ms: number) => Math.round(ms * 100) / 100
  return {
    count: sorted.length,
    mean: round(sorted.length ? total / sorted.length : 0),
    p50: round(percentile(sorted, 50)),
    p95: round(percentile(sorted, 95)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted.length ? (sorted[sorted.length - 1] ?? 0) : 0),
  }
}
