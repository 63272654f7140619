/**
 * The Worker's settings, one table: its own rows below, the claim settings (claims/settings.ts),
 * the spool's (spool/config.ts) and each webhook channel's (the `variables` of its object in
 * channels/). worker/env.ts types the bindings from it, worker/config.ts parses through its rows,
 * `npm run dev` routes variables by it and test/local/settings-docs.test.ts checks docs/configuration.md's
 * "Worker" table, `.dev.vars.example` and wrangler.toml's [vars] against it.
 * @module
 */
import { CLAIM_SETTINGS } from '../claims/settings'
import { ORIGIN_SHARED_SECRET } from '../contract/forward-signature'
import { EMAIL_MAILBOX_ALIASES } from '../email/mailbox'
import { OPERATOR_TOKEN } from '../shared/operator-token'
import { type SettingRow, setting, settingTable } from '../shared/settings'
import { API_SETTINGS } from './api/settings'
import { CHANNEL_SETTINGS, type ChannelSettingRow } from './channels'
import { CONNECTION_SETTINGS } from './connections/settings'
import { SHED_SETTINGS } from './shed/config'
import { SPOOL_SETTINGS } from './spool/config'

export const ORIGIN_URL = setting({
  name: 'ORIGIN_URL',
  kind: 'url',
  secret: false,
  doc: 'the origin; unset: every channel answers 503',
})
// One row for both wings (the origin's console signs in with it too).
export { OPERATOR_TOKEN } from '../shared/operator-token'
export const INFLIGHT_WAIT_MS = setting({
  name: 'INFLIGHT_WAIT_MS',
  kind: 'int',
  secret: false,
  default: 600,
  min: 0,
  max: 30_000,
  doc: 'how long a replay waits for an in-flight first attempt before answering 503',
})
export const MAX_BODY_BYTES = setting({
  name: 'MAX_BODY_BYTES',
  kind: 'int',
  secret: false,
  default: 262_144,
  min: 1_024,
  max: 25 * 1024 * 1024,
  doc: 'larger webhook bodies get 413 before any work',
})

export const MAX_IN_FLIGHT = setting({
  name: 'MAX_IN_FLIGHT',
  kind: 'int',
  secret: false,
  default: 256,
  min: 0,
  max: 100_000,
  doc: "webhook and API requests each isolate works on at once; past it the channel's retry answer (503 + Retry-After) before any verification or claim; 0: no bound",
})
export const ADMISSION_WAIT_MS = setting({
  name: 'ADMISSION_WAIT_MS',
  kind: 'int',
  secret: false,
  default: 0,
  min: 0,
  max: 10_000,
  doc: 'how long a request over MAX_IN_FLIGHT may wait for a free place before its retry answer; 0: answered at once',
})

export const SETTLED_MEMO_ENTRIES = setting({
  name: 'SETTLED_MEMO_ENTRIES',
  kind: 'int',
  secret: false,
  default: 0,
  min: 0,
  max: 1_000_000,
  doc: 'keys each isolate remembers as settled done, answering their replays without Redis; 0: off',
})
export const SETTLED_MEMO_SECONDS = setting({
  name: 'SETTLED_MEMO_SECONDS',
  kind: 'int',
  secret: false,
  default: 60,
  min: 1,
  max: 3_600,
  doc: 'how long a memo entry lives (at most the dedup TTL)',
})

export const DECISION_FLUSH_SECONDS = setting({
  name: 'DECISION_FLUSH_SECONDS',
  kind: 'int',
  secret: false,
  default: 5,
  min: 0,
  max: 300,
  doc: "how often each isolate sends its decision counts to the origin (the console's); 0: off",
})

const CORE_SETTINGS = [
  ORIGIN_URL,
  ORIGIN_SHARED_SECRET,
  OPERATOR_TOKEN,
  INFLIGHT_WAIT_MS,
  MAX_BODY_BYTES,
  MAX_IN_FLIGHT,
  ADMISSION_WAIT_MS,
  SETTLED_MEMO_ENTRIES,
  SETTLED_MEMO_SECONDS,
  EMAIL_MAILBOX_ALIASES,
  DECISION_FLUSH_SECONDS,
] as const

type WorkerRow =
  | (typeof CORE_SETTINGS)[number]
  | (typeof CLAIM_SETTINGS)[number]
  | (typeof SPOOL_SETTINGS)[number]
  | (typeof API_SETTINGS)[number]
  | (typeof SHED_SETTINGS)[number]
  | (typeof CONNECTION_SETTINGS)[number]
  | ChannelSettingRow

export const WORKER_SETTINGS: readonly SettingRow[] = settingTable(
  CORE_SETTINGS,
  CLAIM_SETTINGS,
  SPOOL_SETTINGS,
  API_SETTINGS,
  SHED_SETTINGS,
  CONNECTION_SETTINGS,
  CHANNEL_SETTINGS,
)

/** Every variable the Worker reads (a string binding each; worker/env.ts). */
export type WorkerSettingName = WorkerRow['name']
/** Those put with `wrangler secret put` (locally `.dev.vars`), never in wrangler.toml. */
export type WorkerSecretName = Extract<WorkerRow, { secret: true }>['name']
