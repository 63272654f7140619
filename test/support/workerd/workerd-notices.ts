/**
 * workerd's info-level notices of connections the workerd tests fail on purpose, kept out of the
 * test output. vitest-pool-workers runs workerd verbose (not an option it lets us change) and
 * prints every info-level log line to stdout; workerd logs a refused connection there even when
 * the Worker catches the fetch's error (a `try { await fetch(dead) } catch {}` logs three lines
 * and a stack). The tests point the Worker at dead Redis and origin URLs on purpose, so a passing
 * run printed 74 such stack traces.
 *
 * Only those notices go ({@link noticeFilter}): stdout (info) lines of a refused connection and
 * the two workerd adds for its fetch. Warnings and errors (stderr), the Worker's own log lines
 * (JSON), a test's output, a rejected `waitUntil` promise and any other workerd line pass
 * untouched; a run says how many it held back.
 * @module
 */

const REFUSED =
  /^exception = kj\/async-io-unix\.c\+\+:\d+: disconnected: connect\(\): Connection refused/
/** The two lines workerd adds for the fetch that failed (caught or not, alike). */
const LOST = [
  /^uncaught exception; source = Uncaught \(in promise\); stack = Error: Network connection lost\./,
  /^uncaught exception; exception = \S+: disconnected: jsg\.Error: Network connection lost\./,
]
/** A request body's pump stopped when the answer went out first (a 413 before the body). */
const PUMP_CANCELED =
  /^exception = workerd\/api\/streams\/internal\.c\+\+:\d+: disconnected: pump canceled/

/**
 * Decides, line by line, what is held back: a refused connection's notice, and for each one the
 * two "Network connection lost" lines that follow it, never more. A "Network connection lost"
 * without a refused connection of its own (a `waitUntil` promise that rejected: workerd reports
 * it with the same two lines) passes.
 */
export function noticeFilter(): (chunk: string) => boolean {
  let owed = 0
  return (chunk) => {
    if (REFUSED.test(chunk)) {
      owed += LOST.length
      return true
    }
    if (owed > 0 && LOST.some((line) => line.test(chunk))) {
      owed--
      return true
    }
    return PUMP_CANCELED.test(chunk)
  }
}

/**
 * Filters this process's stdout (the pool writes workerd's info lines there) and returns how many
 * notices it held back so far.
 */
export function holdBackExpectedNotices(stdout: NodeJS.WriteStream = process.stdout): () => number {
  let held = 0
  const expected = noticeFilter()
  const write = stdout.write.bind(stdout) as (...args: unknown[]) => boolean
  stdout.write = ((chunk: unknown, ...rest: unknown[]) => {
    if (typeof chunk === 'string' && expected(chunk)) {
      held++
      const done = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined
      done?.()
      return true
    }
    return write(chunk, ...rest)
  }) as typeof stdout.write
  return () => held
}
