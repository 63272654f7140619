/**
 * `npm run dev`'s routing of variables, by the settings tables: each wing gets the variables of
 * its own table (worker/settings.ts, origin/settings.ts) and the stack keeps its own (below),
 * so a channel's new variable reaches the Worker, and the Gmail OAuth secrets never do, without
 * a list here. test/local/settings-docs.test.ts checks docs/configuration.md's "Local stack" table against
 * {@link LOCAL_SETTINGS}.
 * @module
 */

import { ORIGIN_SETTINGS } from '../origin/settings'
import { type IntSetting, readInt, type SettingRow, setting } from '../shared/settings'
import { WORKER_SETTINGS } from '../worker/settings'

const port = <const N extends string>(name: N, fallback: number, doc: string) =>
  setting({ name, kind: 'int', secret: false, default: fallback, min: 1, max: 65535, doc })

export const WORKER_PORT = port('WORKER_PORT', 8787, 'wrangler dev')
export const ORIGIN_PORT = port('ORIGIN_PORT', 8788, 'the origin')
export const UPSTASH_PORT = port('UPSTASH_PORT', 8079, 'the Upstash REST stand-in')

/** Settings of the stack itself: never a Worker binding (the origin's own variables aside). */
export const LOCAL_SETTINGS: readonly SettingRow[] = [
  setting({
    name: 'DATABASE_URL',
    kind: 'string',
    secret: true,
    doc: 'a real Postgres (the database is created if missing, then migrated); unset: PGlite',
  }),
  setting({
    name: 'REDIS_URL',
    kind: 'string',
    secret: true,
    doc: 'a real Redis behind the Upstash stand-in; unset: an in-memory store',
  }),
  WORKER_PORT,
  ORIGIN_PORT,
  UPSTASH_PORT,
]

/**
 * Variables the stack sets for the origin itself (the database layer's, the listen address),
 * whatever the file says.
 */
const SET_BY_THE_STACK = new Set(['DATABASE_URL', 'NEON_WS_PROXY', 'ORIGIN_PORT', 'ORIGIN_HOST'])

export interface DevRouting {
  /** The Worker's bindings from the file and environment (its table's variables only). */
  worker: Record<string, string>
  /** The origin's environment from them (its table's, less what the stack sets). */
  origin: Record<string, string>
  /** Names in no table: passed to neither (a typo, or a variable nobody reads). */
  unknown: string[]
}

const names = (rows: readonly SettingRow[]) => new Set(rows.map((row) => row.name))
const WORKER_NAMES = names(WORKER_SETTINGS)
const ORIGIN_NAMES = names(ORIGIN_SETTINGS)
const LOCAL_NAMES = names(LOCAL_SETTINGS)

/** Every variable `npm run dev` takes from the environment when no file names it. */
export const DEV_VARIABLES: readonly string[] = [
  ...new Set([...WORKER_NAMES, ...ORIGIN_NAMES, ...LOCAL_NAMES]),
]

/** Which side each value goes to. */
export function routeDevSettings(values: Record<string, string>): DevRouting {
  const routing: DevRouting = { worker: {}, origin: {}, unknown: [] }
  for (const [name, value] of Object.entries(values)) {
    if (WORKER_NAMES.has(name)) routing.worker[name] = value
    if (ORIGIN_NAMES.has(name) && !SET_BY_THE_STACK.has(name)) routing.origin[name] = value
    if (!WORKER_NAMES.has(name) && !ORIGIN_NAMES.has(name) && !LOCAL_NAMES.has(name)) {
      routing.unknown.push(name)
    }
  }
  return routing
}

/** A port of the stack; an invalid one stops `npm run dev` before anything starts. */
export function readPort(values: Record<string, string>, row: IntSetting): number {
  const problems: string[] = []
  const value = readInt(values, row, problems)
  if (problems.length > 0) throw new Error(problems.join('; '))
  return value
}
