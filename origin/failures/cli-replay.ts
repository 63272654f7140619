/**
 * `npm run failures -- replay <id>` and `replay --all-dead`: the replay service's outcomes
 * (replay-service.ts) as lines and an exit code. One line per row, `failure {id}: ` and the
 * sentence of replay-text.ts, on stdout when the row is resolved now, on stderr otherwise.
 * @module
 */
import { type CliIo, EXIT } from './cli-output'
import { type FailureReplay, isResolved } from './replay-outcome'
import { type ReplayServiceDeps, replayAllDead, replayFailure } from './replay-service'
import { describeReplay } from './replay-text'

/** One row: 0 resolved now (or before), 2 this process lacks a setting its path needs, else 1. */
export async function replayOneCommand(
  deps: ReplayServiceDeps,
  id: string,
  io: CliIo,
): Promise<number> {
  const outcome = await replayFailure(deps, id)
  if (outcome.status === 'refused' && outcome.refusal.code === 'not_configured') {
    io.err(`configuration: ${outcome.refusal.missing}`)
    return EXIT.usage
  }
  printLine(outcome, io)
  return isResolved(outcome) ? EXIT.ok : EXIT.failed
}

/** Every dead row, a line each as it is replayed, then the count; 0 only if all are resolved. */
export async function replayAllDeadCommand(deps: ReplayServiceDeps, io: CliIo): Promise<number> {
  let total = 0
  let resolved = 0
  for await (const outcome of replayAllDead(deps)) {
    total++
    if (isResolved(outcome)) resolved++
    if (outcome.status === 'refused' && outcome.refusal.code === 'not_configured') {
      io.err(`failure ${outcome.failureId}: skipped; ${outcome.refusal.missing}`)
    } else {
      printLine(outcome, io)
    }
  }
  if (total === 0) {
    io.out('no dead failures')
    return EXIT.ok
  }
  const failed = total - resolved
  io.out(`replayed ${total} dead failures: ${resolved} resolved, ${failed} still failing`)
  return failed === 0 ? EXIT.ok : EXIT.failed
}

function printLine(outcome: FailureReplay, io: CliIo): void {
  ;(isResolved(outcome) ? io.out : io.err)(
    `failure ${outcome.failureId}: ${describeReplay(outcome)}`,
  )
}
