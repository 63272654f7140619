/**
 * Structured JSON logs: one line per record, `{time, level, msg, ...fields}`. The origin writes one
 * `msg: 'decision'` line per event decision, in the Worker's shape (contract/decision-log.ts).
 * Callers pass ids and keys only: never message bodies, never secrets, never a raw request.
 *
 * Lines to stdout are gathered for one turn of the event loop and written together: a write to a
 * pipe is a system call each (and synchronous on Linux), so under load one write carries the lines
 * of many events; a line waits at most for the turn to end, and what is gathered when the process
 * exits is written then.
 * @module
 */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

export type LogFields = Record<string, unknown>

export interface Logger {
  debug(msg: string, fields?: LogFields): void
  info(msg: string, fields?: LogFields): void
  warn(msg: string, fields?: LogFields): void
  error(msg: string, fields?: LogFields): void
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 }

export function isLogLevel(value: string): value is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(value)
}

export interface LoggerOptions {
  /** @default 'info' */
  level?: LogLevel
  /** Where a finished line goes. @default stdout, a write per turn of the event loop */
  write?: (line: string) => void
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const threshold = RANK[options.level ?? 'info']
  const write = options.write ?? toStdout
  const emit = (level: Exclude<LogLevel, 'silent'>) => (msg: string, fields?: LogFields) => {
    if (RANK[level] < threshold) return
    write(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }))
  }
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') }
}

let gathered = ''
let flushScheduled = false
let flushOnExit = false

function flushStdout(): void {
  flushScheduled = false
  if (gathered === '') return
  const text = gathered
  gathered = ''
  process.stdout.write(text)
}

/** One line to stdout, written with the others of this turn (see the module comment). */
function toStdout(line: string): void {
  gathered += `${line}\n`
  if (!flushOnExit) {
    flushOnExit = true
    process.on('exit', flushStdout)
  }
  if (!flushScheduled) {
    flushScheduled = true
    setImmediate(flushStdout)
  }
}

/** For tests and tools that want no output at all. */
export const silentLogger: Logger = createLogger({ level: 'silent' })
