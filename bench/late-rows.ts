/**
 * Rows that were late for their step's check, checked again once at the end of the run. On a
 * loaded machine an event the gateway queued (shed) can take longer than the step's own wait to
 * land: its batch forward failed on a slow origin and was retried with backoff. That is late, not
 * lost, and only the end of the run can tell them apart: a row that has appeared by then turns
 * the step's failed row checks into passed ones that say how many came late; one still missing
 * after a last wait stays a failure.
 * @module
 */
import type pg from 'pg'
import { type MissingRow, type RowTally, rowCheckList, rowsFound } from './step-rows'
import type { StepOutcome, StepResult } from './steps'
import { sleep } from './util'

/** The last wait, for all the late rows at once. */
const LAST_WAIT_MS = 60_000

export class LateRows {
  private readonly pending: Array<{ step: StepResult; rows: MissingRow[]; tally: RowTally }> = []

  /** Keeps a step whose acknowledged events were not all rows when it was checked. */
  add(outcome: StepOutcome): void {
    if (outcome.missingRows) this.pending.push({ step: outcome.result, ...outcome.missingRows })
  }

  /** Waits (at most LAST_WAIT_MS) for the late rows; rewrites each step's row checks. */
  async recheck(sql: pg.Pool): Promise<string[]> {
    if (this.pending.length === 0) return []
    const until = Date.now() + LAST_WAIT_MS
    let landed = await this.landed(sql)
    while (landed.some((n, i) => n < (this.pending[i]?.rows.length ?? 0)) && Date.now() < until) {
      await sleep(1_000)
      landed = await this.landed(sql)
    }
    return this.pending.map(({ step, rows, tally }, i) => {
      const late = landed[i] ?? 0
      for (const check of rowCheckList(tally, late)) {
        const at = step.checks.findIndex((c) => c.name === check.name)
        if (at >= 0) step.checks[at] = check
      }
      const left = rows.length - late
      const line =
        `${step.id}: ${rows.length} acknowledged events were not rows when the step was checked; ` +
        `${late} were by the end of the run (late)` +
        (left > 0 ? `, ${left} never were` : '')
      step.notes.push(line)
      return line
    })
  }

  private landed(sql: pg.Pool): Promise<number[]> {
    return Promise.all(this.pending.map(({ rows }) => rowsFound(sql, rows).catch(() => 0)))
  }
}
