/**
 * Small helpers of the benchmark: the progress line, bounded waits and number formatting.
 * @module
 */

/** When this run started (the progress lines' clock, the budget, the report's elapsed time). */
export const startedAt = Date.now()

/** One progress line on stdout, with the seconds since the start. */
export function say(message: string): void {
  const t = ((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)
  process.stdout.write(`[bench ${t}s] ${message}\n`)
}

/** Resolves like `promise`, or rejects after `ms` naming `what` (every wait is bounded). */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)
    }),
  ])
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Rounds to `digits` decimals (numbers in the JSON stay numbers). */
export function round(value: number, digits = 1): number {
  const f = 10 ** digits
  return Math.round(value * f) / f
}

/** 12345.6 → "12,346"; small values keep one decimal. */
export function fmt(value: number | null | undefined, digits = 0): string {
  if (value === null || value === undefined || Number.isNaN(value)) return 'n/a'
  return value.toLocaleString('en-US', {
    maximumFractionDigits: digits,
    minimumFractionDigits: digits,
  })
}
