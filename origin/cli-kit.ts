/**
 * What the origin's operator CLIs share (`npm run failures`, `npm run connections`): the exit
 * codes, where lines go, the usage error, and how a failure before the command runs is answered.
 * @module
 */
import { ConfigError } from './config'

/** 0 done; 1 the command failed (or refused its input); 2 usage or configuration. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const

export interface CliIo {
  out(line: string): void
  err(line: string): void
}

/** Arguments the command does not take: printed with the usage text, exit 2. */
export class UsageError extends Error {}

/**
 * A failure while reading the arguments or the configuration: a usage error (its message and
 * the usage text) or a configuration error (each problem), both exit 2. Anything else rethrows.
 */
export function startupExit(err: unknown, io: CliIo, usage: string): number {
  if (err instanceof UsageError) {
    io.err(`${err.message}\n${usage}`)
    return EXIT.usage
  }
  if (err instanceof ConfigError) {
    for (const problem of err.problems) io.err(`configuration: ${problem}`)
    return EXIT.usage
  }
  throw err
}
