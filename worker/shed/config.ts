/**
 * The shedding settings (their rows of the Worker's table, worker/settings.ts), parsed with the
 * rest of the Worker's (worker/config.ts calls {@link parseShedSettings}). What they steer:
 * breaker.ts.
 * @module
 */
import { readInt, type StringEnv, setting } from '../../shared/settings'
import type { BreakerSettings } from './breaker'

export const SHED_AFTER_FAILURES = setting({
  name: 'SHED_AFTER_FAILURES',
  kind: 'int',
  secret: false,
  default: 3,
  min: 0,
  max: 1_000,
  doc: 'forwards in a row that fail or are slow before an isolate queues first-seen events instead of forwarding them; 0: shedding off',
})
export const SHED_SLOW_MS = setting({
  name: 'SHED_SLOW_MS',
  kind: 'int',
  secret: false,
  default: 400,
  min: 50,
  max: 30_000,
  doc: 'a forward slower than this counts as failed for shedding, even if the origin took it; with shedding on, no forward is waited for longer: the event is queued instead',
})
export const SHED_OPEN_MS = setting({
  name: 'SHED_OPEN_MS',
  kind: 'int',
  secret: false,
  default: 2_000,
  min: 100,
  max: 600_000,
  doc: 'how long an isolate sheds before one forward probes the origin again',
})
export const SHED_MAX_INFLIGHT = setting({
  name: 'SHED_MAX_INFLIGHT',
  kind: 'int',
  secret: false,
  default: 32,
  min: 0,
  max: 10_000,
  doc: 'forwards in flight per isolate beyond which a first-seen event is queued; 0: no cap',
})

export const SHED_SETTINGS = [
  SHED_AFTER_FAILURES,
  SHED_SLOW_MS,
  SHED_OPEN_MS,
  SHED_MAX_INFLIGHT,
] as const

export function parseShedSettings(env: StringEnv, warnings: string[]): BreakerSettings {
  return {
    tripAfter: readInt(env, SHED_AFTER_FAILURES, warnings),
    slowMs: readInt(env, SHED_SLOW_MS, warnings),
    openMs: readInt(env, SHED_OPEN_MS, warnings),
    maxInflight: readInt(env, SHED_MAX_INFLIGHT, warnings),
  }
}
