/**
 * Structured JSON log lines: one per delivery decision, plus problems. Never bodies, message text
 * or secrets: keys, codes, statuses and timings only.
 * @module
 */
import {
  DECISION_MSG,
  type DecisionLog,
  decisionLevel,
  type GatewayDecision,
} from '../contract/decision-log'

export type { GatewayDecision as Decision } from '../contract/decision-log'

/** A Worker's decision line: the shared shape (contract/decision-log.ts), component `worker`. */
export type WorkerDecisionLog = Omit<DecisionLog, 'component' | 'decision' | 'status' | 'ms'> & {
  decision: GatewayDecision
  status: number
  ms: number
}

export function logDecision(entry: WorkerDecisionLog): void {
  const line: DecisionLog = { component: 'worker', ...entry }
  console.log(JSON.stringify({ level: decisionLevel(line), msg: DECISION_MSG, ...line }))
}

export function logProblem(
  level: 'warn' | 'error',
  code: string,
  fields: Record<string, string | number | boolean | undefined> = {},
): void {
  logLine(level, code, fields)
}

/** One JSON log line (what logProblem writes, at any level). */
export function logLine(
  level: 'info' | 'warn' | 'error',
  msg: string,
  fields: Record<string, string | number | boolean | undefined> = {},
): void {
  console.log(JSON.stringify({ level, msg, ...fields }))
}

/** An error's name and message as one bounded line (shared/describe-error.ts). */
export { errorLine as describeError } from '../shared/describe-error'
