/**
 * Reading one connection from Workers KV (the origin publishes them: docs/connections.md): by its
 * id (`conn:<id>`, the route id of `/webhooks/<channel>/c/<id>`), or through an index entry
 * (`idx:<channel>:<externalId>` → the id) on a channel's shared path. One KV get per key on a
 * memo miss, bounded in time; the record checked against the contract's schema before anything
 * reads it; its secrets opened with EDGE_KEKS only when a request needs them, once per record
 * version. Each isolate keeps what it read for CONNECTION_CACHE_SECONDS (a key KV does not hold,
 * a fifth of that; memo.ts: found and absent answers apart, and a budget of KV gets per second):
 * what a change waits for at the edge, on top of KV's own propagation.
 *
 * Nothing here throws for what KV holds or fails to hold: each outcome is a {@link Lookup} the
 * route turns into the channel's answer. Log fields never carry a secret or a sealed value.
 * @module
 */
import * as v from 'valibot'
import {
  CONNECTION_ID,
  CONNECTION_LIMITS,
  type ConnectionChannel,
  type EdgeConnection,
  EdgeConnectionSchema,
  kvKeys,
  secretAad,
  secretLive,
} from '../../contract/connection'
import { EnvelopeError, importKeyRing, type KeyRing, open } from '../../shared/envelope'
import { readInt } from '../../shared/settings'
import type { Env } from '../env'
import { logProblem } from '../log'
import { perIsolate } from '../per-isolate'
import {
  KV_MISSES_PER_SECOND,
  LookupMemo,
  MEMO_ENTRIES,
  NEGATIVE_ENTRIES,
  OVER_BUDGET,
} from './memo'
import { CONNECTION_CACHE_SECONDS } from './settings'

export { MEMO_ENTRIES } from './memo'

/** How long one KV get may take before the request gets its channel's retry answer. */
export const KV_READ_TIMEOUT_MS = 1_000
/** KV's smallest `cacheTtl` (30 s since January 2026; Miniflare refuses less). */
const KV_CACHE_TTL_SECONDS = 30

/** A secret as a request uses it: opened, with when it stops verifying. */
export interface OpenedSecret {
  field: string
  kid: string
  notAfter: string | null
  value: string
}

/** A connection as the edge read it: the record, and its secrets opened on first use. */
export interface ReadConnection {
  record: EdgeConnection
  /** Its secrets, opened once per record (rejects with EnvelopeError when EDGE_KEKS cannot). */
  secrets(): Promise<readonly OpenedSecret[]>
}

export type Lookup =
  | { kind: 'found'; connection: ReadConnection }
  /** KV holds no such key (an unknown id, an id of no connection yet, no index entry). */
  | { kind: 'none' }
  /** KV failed, was slow, is not bound, or holds what cannot be used: never a verdict. */
  | { kind: 'unavailable'; reason: string }

/** An index entry's answer: the id of the connection it names. */
type IndexLookup = { kind: 'found'; id: string } | Exclude<Lookup, { kind: 'found' }>

interface ReaderState {
  kv: KVNamespace | null
  ring: Promise<KeyRing | null> | null
  memo: LookupMemo<Lookup | IndexLookup>
  budgetLoggedAt: number
}

const stateFor = perIsolate((env: Env): ReaderState => {
  const warnings: string[] = []
  const seconds = readInt(env, CONNECTION_CACHE_SECONDS, warnings)
  for (const warning of warnings) logProblem('warn', 'config', { warning })
  const limits = {
    entries: MEMO_ENTRIES,
    negatives: NEGATIVE_ENTRIES,
    missesPerSecond: KV_MISSES_PER_SECOND,
    cacheMs: seconds * 1_000,
  }
  return {
    kv: env.CONNECTIONS ?? null,
    ring: null,
    memo: new LookupMemo(limits),
    budgetLoggedAt: 0,
  }
})

/** Whether this Worker has a registry at all (no binding: the shared paths do no KV work). */
export function hasRegistry(env: Env): boolean {
  return env.CONNECTIONS !== undefined
}

/** The connection `id` of `channel`; a record of another channel is no connection of it. */
export async function connectionById(
  env: Env,
  channel: ConnectionChannel,
  id: string,
): Promise<Lookup> {
  if (!CONNECTION_ID.test(id)) return { kind: 'none' }
  const lookup = await memoized(env, kvKeys.connection(id), () => readRecord(env, id))
  if (lookup.kind === 'found' && lookup.connection.record.channel !== channel)
    return { kind: 'none' }
  return lookup
}

/** The connection an index entry names (`idx:<channel>:<externalId>`), or none. */
export async function connectionByIndex(
  env: Env,
  channel: ConnectionChannel,
  externalId: string,
): Promise<Lookup> {
  const key = kvKeys.index(channel, externalId)
  // KV keys are at most 512 bytes: a longer id is in no index.
  if (new TextEncoder().encode(key).byteLength > 512) return { kind: 'none' }
  const entry = await memoized(env, key, () => readIndex(env, key))
  if (entry.kind !== 'found') return entry
  const lookup = await connectionById(env, channel, entry.id)
  // The index names a connection KV does not hold (yet, or of another channel): the registry
  // knows the id, so the variables may not answer for it; the vendor retries.
  if (lookup.kind === 'none') return unavailable('index_dangling', { key })
  return lookup
}

async function memoized<T extends Lookup | IndexLookup>(
  env: Env,
  key: string,
  read: () => Promise<T>,
): Promise<T> {
  // A key holds one kind of answer: a record's (conn:) or an index entry's (idx:).
  const result = await stateFor(env).memo.get(key, read)
  if (result === OVER_BUDGET) logOverBudget(env)
  return result as T
}

/** Once per second at most: the budget is spent by whoever asks, mostly requests nobody signed. */
function logOverBudget(env: Env): void {
  const state = stateFor(env)
  const now = Date.now()
  if (now - state.budgetLoggedAt < 1_000) return
  state.budgetLoggedAt = now
  logProblem('warn', 'connection_unavailable', { reason: OVER_BUDGET.reason })
}

/** One KV get, bounded; null when KV holds no such key. */
async function kvText(env: Env, key: string): Promise<string | null | { failed: string }> {
  const kv = stateFor(env).kv
  if (!kv) return { failed: 'no_binding' }
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<{ failed: string }>((resolve) => {
    timer = setTimeout(() => resolve({ failed: 'kv_timeout' }), KV_READ_TIMEOUT_MS)
  })
  try {
    return await Promise.race([
      kv.get(key, { type: 'text', cacheTtl: KV_CACHE_TTL_SECONDS }),
      timeout,
    ])
  } catch {
    return { failed: 'kv_error' }
  } finally {
    clearTimeout(timer)
  }
}

async function readIndex(env: Env, key: string): Promise<IndexLookup> {
  const text = await kvText(env, key)
  if (text === null) return { kind: 'none' }
  if (typeof text !== 'string') return unavailable(text.failed, { key })
  const id = text.trim()
  if (!CONNECTION_ID.test(id)) return unavailable('index_malformed', { key })
  // Only the id is held for an index entry: the record is read (and memoized) under its own key.
  return { kind: 'found', id }
}

async function readRecord(env: Env, id: string): Promise<Lookup> {
  const text = await kvText(env, kvKeys.connection(id))
  if (text === null) return { kind: 'none' }
  if (typeof text !== 'string') return unavailable(text.failed, { connection: id })
  if (text.length > CONNECTION_LIMITS.recordBytes) {
    return unavailable('record_too_large', { connection: id })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return unavailable('record_malformed', { connection: id })
  }
  const parsed = v.safeParse(EdgeConnectionSchema, json)
  if (!parsed.success || parsed.output.id !== id) {
    // The field's path only: a value could be a sealed secret.
    const path = parsed.success ? 'id' : parsed.issues[0]?.path?.map((p) => String(p.key)).join('.')
    return unavailable('record_malformed', { connection: id, field: path ?? '(root)' })
  }
  const record = parsed.output
  let opened: Promise<readonly OpenedSecret[]> | null = null
  return {
    kind: 'found',
    connection: {
      record,
      secrets: () => {
        opened ??= openSecrets(env, record)
        return opened
      },
    },
  }
}

async function openSecrets(env: Env, record: EdgeConnection): Promise<readonly OpenedSecret[]> {
  const state = stateFor(env)
  state.ring ??= importKeyRing(env.EDGE_KEKS).catch(() => null)
  const ring = await state.ring
  if (!ring)
    throw new EnvelopeError('kek_invalid', 'EDGE_KEKS is unset or not id:<32 bytes base64>')
  return Promise.all(
    record.secrets.map(async (secret) => ({
      field: secret.field,
      kid: secret.kid,
      notAfter: secret.notAfter,
      value: await open(ring, secret.sealed, secretAad(record.id, secret.field, secret.kid)),
    })),
  )
}

/** The secrets of `field` that verify at `nowMs`: the current one first, then a replaced one. */
export function liveSecrets(
  secrets: readonly OpenedSecret[],
  field: string,
  nowMs = Date.now(),
): string[] {
  return secrets
    .filter((secret) => secret.field === field && secretLive(secret, nowMs))
    .sort((a, b) => Number(a.notAfter !== null) - Number(b.notAfter !== null))
    .map((secret) => secret.value)
}

function unavailable(
  reason: string,
  fields: Record<string, string>,
): { kind: 'unavailable'; reason: string } {
  logProblem('error', 'connection_unavailable', { reason, ...fields })
  return { kind: 'unavailable', reason }
}
