/**
 * One connection as its channel's config: its variables (variables.ts) laid over the Worker's env
 * with the channel's tenant variables cleared, read by the channel's own `settings`. The channel's
 * verifier then runs unchanged with this one tenant's live secrets (at most the current one and
 * the one it replaced) and its ids, and its scope checks refuse any id the body names that is not
 * the connection's. Built once per connection version and set of live secrets, per isolate.
 * @module
 */
import { type EventConnection, secretLive } from '../../contract/connection'
import {
  type ChannelConfig,
  type Classified,
  deliveriesOf,
  type PathParams,
  type WebhookChannel,
} from '../channels/types'
import type { Env } from '../env'
import { ForbiddenError, RetryLaterError } from '../errors'
import { logProblem } from '../log'
import { perIsolate } from '../per-isolate'
import { type Lookup, liveSecrets, MEMO_ENTRIES, type ReadConnection } from './reader'
import { CHANNEL_MAPPINGS, fitsVariable } from './variables'

/** A channel's config for one connection, and what the request then carries of it. */
export interface ConnectionConfig<T> {
  config: ChannelConfig<T>
  connection: EventConnection
  /** The route parameters its verifier reads in place of the path's (WeChat's account). */
  params?: PathParams
}

const memoFor = perIsolate((_env: Env) => new Map<string, ChannelConfig<unknown>>())

/**
 * The connection a lookup found, if a request may be verified with it: unknown, unreadable or
 * unopenable is the channel's retry answer (503: the vendor sends it again, perhaps once the
 * connection reached this location); disabled is refused (403).
 */
export function usableConnection(channel: string, lookup: Lookup, what: string): ReadConnection {
  if (lookup.kind === 'unavailable') {
    throw new RetryLaterError(`${channel}: connection_unavailable (${lookup.reason}) for ${what}`)
  }
  if (lookup.kind === 'none') throw new RetryLaterError(`${channel}: connection_unknown ${what}`)
  const { record } = lookup.connection
  if (record.status !== 'active') {
    throw new ForbiddenError(`${channel}: connection_disabled ${record.id} v${record.version}`)
  }
  return lookup.connection
}

/** The channel's config for this connection (memoized per id, version and live secrets). */
export async function connectionConfig<T>(
  env: Env,
  channel: WebhookChannel<string, T>,
  read: ReadConnection,
  nowMs = Date.now(),
): Promise<ConnectionConfig<T>> {
  const { record } = read
  const mapping = CHANNEL_MAPPINGS[record.channel]
  const ref = { id: record.id, version: record.version }
  if (!mapping) throw new RetryLaterError(`${channel.name}: connection_unusable ${record.id}`)
  const secrets = await read.secrets().catch((err: unknown) => {
    // The code and the KEK id only (EnvelopeError's message): never a sealed or plain value.
    const reason = err instanceof Error ? err.message : 'unopenable'
    logProblem('error', 'connection_unopenable', { connection: record.id, reason })
    throw new RetryLaterError(`${channel.name}: connection_unopenable ${record.id}`)
  })
  const live = secrets.filter((secret) => secretLive(secret, nowMs))
  const params = mapping.params?.(record)
  const key = `${record.id}|${record.version}|${live.map((s) => `${s.field}:${s.kid}`).join(',')}`
  const memo = memoFor(env)
  const held = memo.get(key) as ChannelConfig<T> | undefined
  if (held) return { config: held, connection: ref, ...(params ? { params } : {}) }

  if (!live.every((s) => fitsVariable(s.value)) || !record.ids.every(fitsVariable)) {
    logProblem('error', 'connection_unusable', { connection: record.id, reason: 'separator' })
    throw new RetryLaterError(`${channel.name}: connection_unusable ${record.id}`)
  }
  const overlay: Record<string, unknown> = { ...env }
  for (const name of mapping.clears) overlay[name] = ''
  Object.assign(
    overlay,
    mapping.variables(record, (field) => liveSecrets(live, field, nowMs)),
  )
  const warnings: string[] = []
  const config = channel.settings(overlay, warnings)
  // The parsers' warnings name variables, positions and tenant ids: never a secret.
  for (const warning of warnings) {
    logProblem('warn', 'connection_config', { connection: record.id, warning })
  }
  memo.set(key, config)
  while (memo.size > MEMO_ENTRIES) memo.delete(memo.keys().next().value as string)
  return { config, connection: ref, ...(params ? { params } : {}) }
}

/** Each event says which connection (and version) verified it: the origin refuses a disabled one's. */
export function carryConnection(classified: Classified, connection: EventConnection): void {
  for (const delivery of deliveriesOf(classified)) {
    if (delivery.action === 'forward') delivery.draft.connection = connection
  }
}
