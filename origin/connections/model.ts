/**
 * What a connection may be, checked against its channel's kind (contract/connection.ts
 * CONNECTION_KINDS) before anything is written: the account's form, the ids' form and count,
 * the settings it knows, the secret fields it needs. Every problem names the field
 * (`account`, `ids.3`, `secrets.signing_secret`), never the value refused.
 *
 * Secrets and ids are later written into the Worker's per-tenant variable form
 * (`TENANT=s1|s2,OTHER=s3`, worker/connections/config.ts): a `,`, a `|` or a space in one would
 * change its meaning there, so none may hold them.
 * @module
 */
import * as v from 'valibot'
import {
  CONNECTION_ANY_ID,
  CONNECTION_CHANNELS,
  CONNECTION_KINDS,
  CONNECTION_LIMITS,
  type ConnectionChannel,
  type ConnectionKind,
  type ConnectionStatus,
  ConnectionStatusSchema,
} from '../../contract/connection'
import { withoutSubaddress } from '../../email/mailbox'
import { needIds, needSettings, SECRET_RULES, SETTING_RULES } from './edge-rules'
import { invalid } from './errors'
import { GENERATORS, generatable } from './generate'

/** A secret as a vendor issues one: printable ASCII without `,` `|` or a space. */
const SECRET = /^[\x21-\x2b\x2d-\x7b\x7d\x7e]+$/
/** Ids and settings of one connection as JSON: far below an edge record's bound. */
const MAX_LISTED_BYTES = 64 * 1024
/** The longest overlap a rotation may give the secret it replaces: 30 days. */
export const MAX_OVERLAP_SECONDS = 30 * 24 * 3600
export const DEFAULT_OVERLAP_SECONDS = 24 * 3600

export interface ConnectionDraft {
  channel: ConnectionChannel
  account: string
  ids: string[]
  settings: Record<string, string>
  status: ConnectionStatus
  /** field → the secrets given for it, current first (an import may give two). */
  secrets: Record<string, string[]>
  /** The fields whose secret the registry made (generate.ts): answered once. */
  generated?: string[]
}

export interface RotateDraft {
  /** field → the new secret. */
  secrets: Record<string, string>
  overlapSeconds: number
  /** The fields whose new secret the registry made: answered once. */
  generated?: string[]
}

const CreateShape = v.strictObject({
  channel: v.string(),
  account: v.string(),
  ids: v.optional(v.array(v.string())),
  settings: v.optional(v.record(v.string(), v.string())),
  status: v.optional(ConnectionStatusSchema),
  secrets: v.optional(v.record(v.string(), v.union([v.string(), v.array(v.string())]))),
  generate: v.optional(v.array(v.string())),
})

const RotateShape = v.strictObject({
  secrets: v.optional(v.record(v.string(), v.string())),
  generate: v.optional(v.array(v.string())),
  overlapSeconds: v.optional(v.pipe(v.number(), v.safeInteger())),
})

/** The kind's rules of a channel; throws naming `channel` when there is no such channel. */
export function kindOf(channel: string): ConnectionKind {
  const kind = (CONNECTION_KINDS as Record<string, ConnectionKind>)[channel]
  if (!kind) throw invalid('channel', `one of ${CONNECTION_CHANNELS.join(', ')}`)
  return kind
}

/**
 * The rule an id of `channel` follows, or null when the channel lists none. An API connection's
 * ids are its keys' hashes, which the registry sets from its keys (the edge finds the connection
 * by the hash, then compares the key itself: worker/connections/api-keys.ts): none are given.
 */
export function idRule(channel: ConnectionChannel): { noun: string; pattern: RegExp } | null {
  if (channel === 'api') return null
  return kindOf(channel).ids ?? null
}

/**
 * Secret fields a connection may go without: a WeChat account in plain mode has no EncodingAESKey;
 * an API tenant holds keys, key hashes (from API_KEYS) or both (ONE_OF_SECRET_FIELDS).
 */
const OPTIONAL_SECRET_FIELDS: Partial<Record<ConnectionChannel, readonly string[]>> = {
  wechat: ['aes_key'],
  api: ['api_key', 'api_key_hash'],
}

/** Per channel, fields of which a new connection needs at least one. */
const ONE_OF_SECRET_FIELDS: Partial<Record<ConnectionChannel, readonly string[]>> = {
  api: ['api_key', 'api_key_hash'],
}

/** A new connection's secrets lack a field it must be given. @throws naming the field */
function needSecrets(channel: ConnectionChannel, secrets: Record<string, string[]>): void {
  const optional = OPTIONAL_SECRET_FIELDS[channel] ?? []
  for (const field of kindOf(channel).secretFields) {
    if (!optional.includes(field) && !secrets[field]) throw invalid(`secrets.${field}`, 'required')
  }
  const oneOf = ONE_OF_SECRET_FIELDS[channel]
  if (oneOf && !oneOf.some((field) => secrets[field])) {
    throw invalid(`secrets.${oneOf[0]}`, `required: give ${oneOf.join(' or ')}`)
  }
}

/** A new connection, from untrusted JSON. @throws {ConnectionError} naming the field */
export function parseConnectionInput(input: unknown): ConnectionDraft {
  const shape = v.safeParse(CreateShape, input)
  if (!shape.success) throw shapeProblem(shape.issues)
  const { channel, account } = shape.output
  const kind = kindOf(channel)
  const name = channel as ConnectionChannel
  if (!kind.account.pattern.test(account)) throw invalid('account', `must be ${kind.account.hint}`)
  const ids = checkIds(name, shape.output.ids ?? [])
  if (name === 'email') checkMailbox(account, ids)
  const settings = checkSettings(name, shape.output.settings ?? {})
  const secrets: Record<string, string[]> = {}
  for (const [field, value] of Object.entries(shape.output.secrets ?? {})) {
    secrets[field] = checkSecrets(name, field, typeof value === 'string' ? [value] : value)
  }
  const generated = generateInto(name, shape.output.generate, secrets)
  needSecrets(name, secrets)
  needIds(name, ids)
  needSettings(name, secrets, settings)
  const status = shape.output.status ?? 'active'
  return { channel: name, account, ids, settings, status, secrets, ...generated }
}

/** A rotation, from untrusted JSON, for a connection of `channel`. */
export function parseRotateInput(channel: ConnectionChannel, input: unknown): RotateDraft {
  const shape = v.safeParse(RotateShape, input)
  if (!shape.success) throw shapeProblem(shape.issues)
  const given = shape.output.secrets ?? {}
  for (const [field, value] of Object.entries(given)) checkSecrets(channel, field, [value])
  const lists: Record<string, string[]> = Object.fromEntries(
    Object.entries(given).map(([field, value]) => [field, [value]]),
  )
  const generated = generateInto(channel, shape.output.generate, lists)
  const secrets = Object.fromEntries(
    Object.entries(lists).map(([f, [value]]) => [f, value as string]),
  )
  if (Object.keys(secrets).length === 0) throw invalid('secrets', 'name at least one secret field')
  const overlapSeconds = shape.output.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS
  if (overlapSeconds < 0 || overlapSeconds > MAX_OVERLAP_SECONDS) {
    throw invalid('overlapSeconds', `from 0 to ${MAX_OVERLAP_SECONDS}`)
  }
  return { secrets, overlapSeconds, ...generated }
}

export interface UpdateDraft {
  ids?: string[]
  settings?: Record<string, string>
}

const UpdateShape = v.strictObject({
  ids: v.optional(v.array(v.string())),
  settings: v.optional(v.record(v.string(), v.string())),
})

/** New ids and / or settings for a connection of `channel`, from untrusted JSON. */
export function parseUpdateInput(channel: ConnectionChannel, input: unknown): UpdateDraft {
  const shape = v.safeParse(UpdateShape, input)
  if (!shape.success) throw shapeProblem(shape.issues)
  const { ids, settings } = shape.output
  if (!ids && !settings) throw invalid('(body)', 'give ids or settings')
  if (channel === 'api' && ids)
    throw invalid('ids', "an API connection's ids follow its keys: rotate")
  return {
    ...(ids ? { ids: needIds(channel, checkIds(channel, ids)) } : {}),
    ...(settings ? { settings: checkSettings(channel, settings) } : {}),
  }
}

/** Fills `secrets` with a generated value for each field of `generate`; names them. */
function generateInto(
  channel: ConnectionChannel,
  generate: readonly string[] | undefined,
  secrets: Record<string, string[]>,
): { generated?: string[] } {
  if (!generate?.length) return {}
  const makers = GENERATORS[channel] ?? {}
  generate.forEach((field, index) => {
    const make = makers[field]
    if (!make) {
      const known = generatable(channel).join(', ') || 'none'
      throw invalid(`generate.${index}`, `not a field the registry generates here (${known})`)
    }
    if (secrets[field]) throw invalid(`generate.${index}`, 'also given in secrets')
    secrets[field] = [make()]
  })
  return { generated: [...new Set(generate)] }
}

function checkIds(channel: ConnectionChannel, ids: readonly string[]): string[] {
  const rule = idRule(channel)
  if (!rule) {
    if (ids.length > 0) {
      const why =
        channel === 'api' ? "are its keys' hashes, set from secrets.api_key / api_key_hash" : 'none'
      throw invalid('ids', `a ${channel} connection's ids: ${why}`)
    }
    return []
  }
  if (ids.length > CONNECTION_LIMITS.ids) {
    throw invalid('ids', `at most ${CONNECTION_LIMITS.ids} ${rule.noun}`)
  }
  ids.forEach((id, index) => {
    if (!rule.pattern.test(id)) throw invalid(`ids.${index}`, `not one of the ${rule.noun}`)
    if (channel === 'email' && withoutSubaddress(id) !== id) {
      throw invalid(`ids.${index}`, CANONICAL_ADDRESS)
    }
  })
  const unique = [...new Set(ids)]
  if (JSON.stringify(unique).length > MAX_LISTED_BYTES) {
    throw invalid('ids', `longer than ${MAX_LISTED_BYTES} bytes as JSON`)
  }
  return unique
}

/**
 * A mailbox and its aliases as the edge looks them up: canonical (email/mailbox.ts: lower case,
 * no `+tag`, which the Worker strips from the envelope recipient before `idx:email:<address>`),
 * and no alias the mailbox itself.
 */
function checkMailbox(account: string, ids: readonly string[]): void {
  if (withoutSubaddress(account) !== account) throw invalid('account', CANONICAL_ADDRESS)
  ids.forEach((id, index) => {
    if (id === account) throw invalid(`ids.${index}`, 'the mailbox itself, not an alias')
  })
}

const CANONICAL_ADDRESS = 'lower case, without a +tag (mail to local+tag@ is keyed as local@)'

function checkSettings(channel: ConnectionChannel, settings: Record<string, string>) {
  const kind = kindOf(channel)
  const known: readonly string[] = kind.settings ?? []
  for (const [name, value] of Object.entries(settings)) {
    if (!known.includes(name)) {
      throw invalid(
        `settings.${safeKey(name)}`,
        known.length ? `one of ${known.join(', ')}` : 'none known',
      )
    }
    if (!CONNECTION_ANY_ID.test(value)) throw invalid(`settings.${name}`, 'an id of 1-128 chars')
    const rule = SETTING_RULES[channel]?.[name]
    if (rule && !rule.pattern.test(value)) throw invalid(`settings.${name}`, rule.hint)
  }
  return { ...settings }
}

function checkSecrets(
  channel: ConnectionChannel,
  field: string,
  values: readonly string[],
): string[] {
  const kind = kindOf(channel)
  const where = `secrets.${safeKey(field)}`
  if (!kind.secretFields.includes(field)) {
    const known = kind.secretFields.join(', ') || 'none'
    throw invalid(where, `not a secret field of this channel (${known})`)
  }
  if (values.length === 0 || values.length > CONNECTION_LIMITS.secretsPerField) {
    throw invalid(where, `one to ${CONNECTION_LIMITS.secretsPerField} secrets`)
  }
  for (const value of values) {
    if (value.length === 0 || value.length > CONNECTION_LIMITS.secretChars) {
      throw invalid(where, `1 to ${CONNECTION_LIMITS.secretChars} characters`)
    }
    if (!SECRET.test(value)) throw invalid(where, 'printable ASCII without , | or spaces')
    const rule = SECRET_RULES[channel]?.[field]
    if (rule && !rule.pattern.test(value)) throw invalid(where, rule.hint)
  }
  if (new Set(values).size !== values.length) throw invalid(where, 'the same secret twice')
  return [...values]
}

/** valibot's first issue as a problem naming its path; its message (it quotes values) is not used. */
function shapeProblem(issues: readonly v.BaseIssue<unknown>[]) {
  const issue = issues[0]
  const field = issue?.path?.map((p) => safeKey(p.key)).join('.') || '(body)'
  if (issue?.type === 'strict_object' || issue?.type === 'object') {
    return invalid(field, issue.expected === 'never' ? 'not a known field' : 'an object')
  }
  return invalid(field, `expected ${issue?.expected ?? 'another type'}`)
}

/** A key of the input as a field name; one that looks like no field name (a secret?) is not said. */
function safeKey(key: unknown): string {
  const text = String(key)
  return /^[A-Za-z_][A-Za-z0-9_]{0,31}$/.test(text) || /^[0-9]{1,4}$/.test(text) ? text : '?'
}
