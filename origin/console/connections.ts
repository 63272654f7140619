/**
 * The forms of the console's connection pages, as the registry's input. The registry itself
 * (validation, sealing, the audit, the publication to the edge) is the connections service
 * (origin/connections/service.ts), which the admin API and the CLI call too: the console adds no
 * SQL and no rule of its own. Secrets go one way: a form field into the service; the pages only
 * ever get views, which hold fingerprints and kids. Nothing here echoes a submitted secret: a
 * refused form comes back with its other fields, its secret inputs empty, and any problem text
 * that happened to hold a submitted value has it blanked ({@link withoutSecrets}).
 * @module
 */
import {
  CONNECTION_CHANNELS,
  CONNECTION_KINDS,
  type ConnectionChannel,
  type ConnectionKind,
} from '../../contract/connection'
import { ConnectionError, type ConnectionView } from '../connections/service'

export type { ConnectionDetail, ConnectionView, SecretView } from '../connections/service'

export interface ConnectionFilter {
  channel?: ConnectionChannel
  status?: 'active' | 'disabled'
  /** An account, or the start of one. */
  account?: string
  /** Keyset cursor: connections after this id. */
  after?: string
}

/** The create form as the service's input (model.ts `parseConnectionInput`). */
export interface ConnectionDraft {
  channel: ConnectionChannel
  account: string
  ids: string[]
  settings: Record<string, string>
  /** field -> value: write-only. */
  secrets: Record<string, string>
}

/** A refusal the page can show: a stable code and what was wrong, by field (never a value). */
export interface ConnectionProblem {
  code: string
  message: string
  field?: string
}

export const PAGE_SIZE = 100
/** The old secret keeps verifying this long after a rotation unless the form says otherwise. */
export const DEFAULT_OVERLAP_HOURS = 24
export const MAX_OVERLAP_HOURS = 24 * 30

/** The form field of a secret: `secret.<field>` (never sent back to the browser filled). */
export const secretInput = (field: string) => `secret.${field}`
export const settingInput = (name: string) => `setting.${name}`

export const kindOf = (channel: ConnectionChannel): ConnectionKind => CONNECTION_KINDS[channel]

export function channelOf(raw: string | undefined): ConnectionChannel | undefined {
  return (CONNECTION_CHANNELS as readonly string[]).includes(raw ?? '')
    ? (raw as ConnectionChannel)
    : undefined
}

/** The list's filter from its query string; anything unknown or malformed is dropped. */
export function parseConnectionFilter(query: Record<string, string>): ConnectionFilter {
  const account = (query.account ?? '').trim().slice(0, 320)
  const after = /^c_[a-z2-7]{26}$/.test(query.after ?? '') ? query.after : undefined
  const status = query.status === 'active' || query.status === 'disabled' ? query.status : undefined
  return {
    ...(channelOf(query.channel) ? { channel: channelOf(query.channel) } : {}),
    ...(status ? { status } : {}),
    ...(account ? { account } : {}),
    ...(after ? { after } : {}),
  }
}

/** Ids as an operator types them: one a line, or separated by commas or spaces. */
export function splitIds(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(/[\s,]+/)
    .map((id) => id.trim())
    .filter(Boolean)
}

/**
 * The create form as a draft of `channel`'s kind: only the fields that kind has are read (a
 * secret field of another kind is ignored, not stored). Validation is the service's.
 */
export function draftOf(channel: ConnectionChannel, form: Record<string, string>): ConnectionDraft {
  const kind = kindOf(channel)
  const settings: Record<string, string> = {}
  for (const name of kind.settings ?? []) {
    const value = (form[settingInput(name)] ?? '').trim()
    if (value) settings[name] = value
  }
  // A browser posts every input, an empty one as '': that is a field not given (WeChat's
  // aes_key in plain mode; an API tenant's api_key or api_key_hash), for the service to require.
  const secrets: Record<string, string> = {}
  for (const field of kind.secretFields) {
    const value = form[secretInput(field)] ?? ''
    if (value !== '') secrets[field] = value
  }
  return {
    channel,
    account: (form.account ?? '').trim(),
    ids: kind.ids ? splitIds(form.ids) : [],
    settings,
    secrets,
  }
}

/** What a refused create form shows again: everything but its secrets. */
export function redisplayOf(draft: ConnectionDraft): Omit<ConnectionDraft, 'secrets'> {
  const { secrets: _secrets, ...rest } = draft
  return rest
}

/** The edit form: the ids and settings the kind has (the service replaces them whole). */
export function updateOf(
  connection: Pick<ConnectionView, 'channel'>,
  form: Record<string, string>,
): { ids?: string[]; settings?: Record<string, string> } {
  const kind = kindOf(connection.channel)
  const { ids, settings } = draftOf(connection.channel, form)
  return { ...(kind.ids ? { ids } : {}), ...(kind.settings ? { settings } : {}) }
}

/** The rotate form: the field (one of the kind's), the new secret, the overlap in hours. */
export function rotationOf(
  connection: ConnectionView,
  form: Record<string, string>,
): { secrets: Record<string, string>; overlapSeconds: number } | ConnectionProblem {
  const fields = kindOf(connection.channel).secretFields as readonly string[]
  const field = form.field ?? fields[0] ?? ''
  if (!fields.includes(field)) {
    return { code: 'invalid_field', field: 'field', message: 'no such secret field' }
  }
  const raw = (form.overlap_hours ?? '').trim()
  const hours = raw === '' ? DEFAULT_OVERLAP_HOURS : Number(raw)
  if (!Number.isInteger(hours) || hours < 0 || hours > MAX_OVERLAP_HOURS) {
    const message = `the overlap is a whole number of hours from 0 to ${MAX_OVERLAP_HOURS}`
    return { code: 'invalid_overlap', field: 'overlap_hours', message }
  }
  return { secrets: { [field]: form[secretInput(field)] ?? '' }, overlapSeconds: hours * 3600 }
}

/**
 * A problem's text with every submitted secret blanked: the service's messages name fields, not
 * values, and this keeps it so even if one ever quoted its input.
 */
export function withoutSecrets(
  problem: ConnectionProblem,
  secrets: readonly string[],
): ConnectionProblem {
  let message = problem.message
  for (const secret of secrets) if (secret) message = message.split(secret).join('•••')
  return { ...problem, message }
}

/** The flash of `?done=`: fixed texts only (nothing from the URL is shown). */
export const DONE_FLASH = {
  created: 'Connection created. The edge has it once its version shows as seen.',
  rotated: 'Secret rotated: the new one is current; the old one verifies until its notAfter.',
  disabled: 'Connection disabled: the origin refuses its events now, the edge within minutes.',
  enabled: 'Connection enabled.',
  updated: 'Connection updated.',
  deleted: 'Connection deleted; its messages stay.',
} as const

/** `?done=`'s text, or none for any other word (`toString` included). */
export const flashOf = (done: string | undefined): string | undefined =>
  done && Object.hasOwn(DONE_FLASH, done) ? DONE_FLASH[done as keyof typeof DONE_FLASH] : undefined

/**
 * The refusal a page shows for the service's typed error, its submitted secrets blanked; null
 * for any other error (that one is the origin's: logged, answered opaquely).
 */
export function problemOf(err: unknown, secrets: readonly string[]): ConnectionProblem | null {
  if (!(err instanceof ConnectionError)) return null
  const problem = {
    code: err.code,
    message: err.message,
    ...(err.field ? { field: err.field } : {}),
  }
  return withoutSecrets(problem, secrets)
}
