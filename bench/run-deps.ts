/**
 * What the measurements of a run need of it: the stack, the load generator, the event factory,
 * the headline concurrency and step settings, the notes, the capacity measured first, and a way to
 * run a step whose figures they report themselves.
 * bench/phases.ts's RunState has all of it; modules that phases.ts calls into take this instead,
 * so that none of them imports phases.ts back.
 * @module
 */
import type { CapacityReport } from './capacity-figures'
import type { BenchConfig } from './config'
import type { LoadGenerator } from './load'
import type { EventFactory } from './requests'
import type { Stack } from './stack'
import type { StepOutcome, StepSpec } from './steps'

export interface RunDeps {
  stack: Stack
  load: LoadGenerator
  factory: EventFactory
  /** The headline concurrency. */
  c50: number
  /** Requests per step. */
  pool: number
  config: Pick<BenchConfig, 'durationS' | 'runTag'>
  /** Lines for the report's notes. */
  notes: string[]
  /** The Worker's capacity on the queue path, once measured (bench/capacity.ts). */
  capacity?: CapacityReport
  /** Runs a step for a measurement of its own, which reports it (not in the results table). */
  measure(spec: StepSpec): Promise<StepOutcome>
}
