/**
 * `npm run failures -- <command>`'s arguments: the three commands, `help` (`--help`, `-h`: the
 * usage, exit code 0), and a {@link UsageError} for anything else (exit code 2 with the usage).
 * @module
 */
import { FAILURE_STATUSES, type FailureStatus } from './store'

export const USAGE = `usage: npm run failures -- <command>
  list [--status pending|dead|resolved] [--limit N]
  replay <id>
  replay --all-dead
  help`

const LIST_DEFAULT_LIMIT = 100

export type Command =
  | { name: 'help' }
  | { name: 'list'; status?: FailureStatus; limit: number }
  | { name: 'replay'; id: string }
  | { name: 'replay-all-dead' }

import { UsageError } from '../cli-kit'

export { UsageError }

export function parseArgs(args: readonly string[]): Command {
  const [command, ...rest] = args
  if (command === 'help' || command === '--help' || command === '-h') return { name: 'help' }
  if (command === 'list') {
    let status: FailureStatus | undefined
    let limit = LIST_DEFAULT_LIMIT
    for (let i = 0; i < rest.length; i++) {
      const flag = rest[i]
      const value = rest[i + 1]
      if (flag === '--status' && FAILURE_STATUSES.includes(value as FailureStatus)) {
        status = value as FailureStatus
      } else if (flag === '--limit' && /^\d{1,6}$/.test(value ?? '') && Number(value) > 0) {
        limit = Number(value)
      } else {
        throw new UsageError(`list: unexpected ${flag ?? ''} ${value ?? ''}`.trim())
      }
      i++
    }
    return { name: 'list', status, limit }
  }
  if (command === 'replay' && rest.length === 1) {
    if (rest[0] === '--all-dead') return { name: 'replay-all-dead' }
    if (/^\d{1,19}$/.test(rest[0] ?? '')) return { name: 'replay', id: rest[0] as string }
  }
  throw new UsageError(command ? `unknown or incomplete command: ${args.join(' ')}` : 'no command')
}
