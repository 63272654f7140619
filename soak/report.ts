/**
 * What a soak run prints: one table, a row per channel and then a row per fault kind (the
 * messages with at least one delivery attempt started while a fault of that kind was in effect;
 * `no fault` for the rest), the problems if any, and the last line, exactly
 * `soak: <events> events, <faults> faults, <lost> lost, <doubled> doubled (seed <seed>)`.
 * @module
 */
import { type Column, markdownTable } from '../local/markdown-table'
import { type CheckResult, is4xx, is5xx, isAccepted, refusedTwilio, type Verdict } from './checker'
import { SOAK_CHANNELS } from './messages'
import { FAULT_KINDS, type FaultRun } from './nemesis'

export interface SoakSummary {
  seed: string
  /** Generator events sent. */
  events: number
  faults: readonly FaultRun[]
  result: CheckResult
  /** Dead events replayed with `npm run failures -- replay --all-dead`, by marker. */
  replayed: ReadonlyMap<string, number>
}

interface Tally {
  label: string
  faults: string
  events: number
  messages: number
  deliveries: number
  accepted: number
  rejected: number
  failed: number
  noAnswer: number
  twilio5xx: number
  replayed: number
  rows: number
  lost: number
  overtaken: number
  doubled: number
  leaked: number
}

const COLUMNS: readonly Column<Tally>[] = [
  ['channel / fault', (t) => t.label],
  ['faults', (t) => t.faults],
  ['events', (t) => t.events],
  ['messages', (t) => t.messages],
  ['deliveries', (t) => t.deliveries],
  ['2xx', (t) => t.accepted],
  ['4xx', (t) => t.rejected],
  ['5xx', (t) => t.failed],
  ['no answer', (t) => t.noAnswer],
  ['twilio 5xx', (t) => t.twilio5xx],
  ['dead, replayed', (t) => t.replayed],
  ['rows', (t) => t.rows],
  ['lost', (t) => t.lost],
  ['deletes overtaken', (t) => t.overtaken],
  ['doubled', (t) => t.doubled],
  ['forged leaks', (t) => t.leaked],
]

/**
 * Sums `verdicts`; `events` counts the generator events of theirs that pass `eventFilter` (a
 * fault row counts only the events with an attempt in that fault).
 */
function tally(
  label: string,
  faults: string,
  verdicts: readonly Verdict[],
  replayed: ReadonlyMap<string, number>,
  inRow: (attempt: Verdict['message']['attempts'][number]) => boolean = () => true,
): Tally {
  const t: Tally = {
    label,
    faults,
    events: 0,
    messages: verdicts.length,
    deliveries: 0,
    accepted: 0,
    rejected: 0,
    failed: 0,
    noAnswer: 0,
    twilio5xx: 0,
    replayed: 0,
    rows: 0,
    lost: 0,
    overtaken: 0,
    doubled: 0,
    leaked: 0,
  }
  for (const v of verdicts) {
    const attempts = v.message.attempts.filter(inRow)
    t.events += new Set(attempts.map((a) => a.event)).size
    t.deliveries += attempts.length
    t.accepted += attempts.filter(isAccepted).length
    t.rejected += attempts.filter(is4xx).length
    t.failed += attempts.filter(is5xx).length
    t.noAnswer += attempts.filter(
      (a) => typeof a.outcome === 'string' && a.outcome !== 'stored',
    ).length
    if (refusedTwilio(v.message) && attempts.some(is5xx)) t.twilio5xx++
    t.replayed += replayed.get(v.message.marker) ?? 0
    t.rows += v.rows
    t.lost += v.lost ? 1 : 0
    t.overtaken += v.overtaken ? 1 : 0
    t.doubled += v.doubled
    t.leaked += v.leaked
  }
  return t
}

export function formatTable(summary: SoakSummary): string {
  const { verdicts } = summary.result
  const valid = verdicts.filter((v) => !v.message.forged)
  const rows: Tally[] = SOAK_CHANNELS.map((channel) =>
    tally(
      channel,
      '',
      valid.filter((v) => v.message.channel === channel),
      summary.replayed,
    ),
  )
  rows.push(
    tally(
      'forged',
      '',
      verdicts.filter((v) => v.message.forged),
      summary.replayed,
    ),
  )
  for (const kind of FAULT_KINDS) {
    const inKind = (a: Verdict['message']['attempts'][number]) => a.faults.includes(kind)
    rows.push(
      tally(
        kind,
        String(summary.faults.filter((f) => f.kind === kind).length),
        verdicts.filter((v) => v.message.attempts.some(inKind)),
        summary.replayed,
        inKind,
      ),
    )
  }
  const calm = (a: Verdict['message']['attempts'][number]) => a.faults.length === 0
  rows.push(
    tally(
      'no fault',
      '',
      verdicts.filter((v) => v.message.attempts.every(calm)),
      summary.replayed,
      calm,
    ),
  )
  rows.push(tally('all', String(summary.faults.length), verdicts, summary.replayed))
  return markdownTable(COLUMNS, rows)
}

/** The run's last line, exactly as the issue spells it. */
export function lastLine(summary: SoakSummary): string {
  const { result } = summary
  return `soak: ${summary.events} events, ${summary.faults.length} faults, ${result.lost} lost, ${result.doubled} doubled (seed ${summary.seed})`
}
