/**
 * What `npm run failures` prints: the exit codes and the table of `list` (a replay's line is
 * replay-text.ts's). Lines only; which stream a line goes to is the command's choice.
 * @module
 */
import type { Failure } from './store'

/** 0 done; 1 a replay failed, a row was not replayable, or the database did not answer; 2 usage. */
export { type CliIo, EXIT } from '../cli-kit'

const ERROR_COLUMN_WIDTH = 60
const KEY_COLUMN_WIDTH = 48

const HEADER = [
  'id',
  'status',
  'stage',
  'attempts',
  'outbox',
  'message',
  'channel',
  'delivery key',
  'next attempt',
  'error',
]

/** One padded line per row under a header line; long keys and errors cut to their column. */
export function failureTable(rows: readonly Failure[]): string[] {
  const table = [
    HEADER,
    ...rows.map((f) => [
      f.id,
      f.status,
      f.source ? `${f.stage}/${f.source}` : f.stage,
      String(f.attempts),
      f.outboxId ?? '-',
      f.messageId ?? '-',
      f.channel,
      truncate(f.deliveryKey ?? '-', KEY_COLUMN_WIDTH),
      f.status === 'pending' ? f.nextAttemptAt : '-',
      truncate(f.error, ERROR_COLUMN_WIDTH),
    ]),
  ]
  const widths = HEADER.map((_, i) => Math.max(...table.map((r) => r[i]?.length ?? 0)))
  return table.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  )
}

function truncate(text: string, width: number): string {
  const line = text.replace(/\s+/g, ' ')
  return line.length <= width ? line : `${line.slice(0, width - 1)}…`
}
