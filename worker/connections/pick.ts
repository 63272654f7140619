/**
 * How a webhook request finds the config that verifies it (docs/design.md, "How a request finds
 * its connection"):
 * - `/webhooks/<channel>/c/<id>`: the connection of that id (one KV get on a memo miss). A
 *   record of another channel, an id KV does not hold (yet), or KV out of reach: the channel's
 *   retry answer; disabled: 403. Never the variables.
 * - the shared path of a channel with an index (Slack, Meta, LINE): the id its body names
 *   (index-ids.ts) → `idx:<channel>:<id>` → that connection, which wins over the variables;
 *   no index entry: the variables, as before. Without the CONNECTIONS binding nothing of this
 *   runs (no KV work, no body read before the config check).
 * - the shared path of a channel whose tenant is known before verification (Telegram, WeChat,
 *   Twilio: account-hint.ts): `idx:<channel>:<account>` the same way, so a tenant the registry
 *   holds (and perhaps disabled) is never verified by its old variable.
 * - an index entry whose record KV does not hold (yet): the retry answer, never the variables.
 * - any other path: the variables.
 * @module
 */
import type { ConnectionChannel } from '../../contract/connection'
import type { ChannelConfig, PathParams, RequestParts, WebhookChannel } from '../channels/types'
import { channelConfig, type Settings } from '../config'
import type { Env } from '../env'
import type { ConfigPicker, PickedConfig } from '../gateway'
import { accountHintOf, hasAccountHint } from './account-hint'
import { connectionConfig, usableConnection } from './config'
import { hasIndex, indexIdOf } from './index-ids'
import { connectionById, connectionByIndex, hasRegistry, type Lookup } from './reader'

/** The path parameter of a connection route (`<first path>/c/:connection`). */
export const CONNECTION_PARAM = 'connection'

/** A channel's connection route: its first path, without its own parameters, and `/c/:connection`. */
export function connectionPath(channel: Pick<WebhookChannel, 'paths'>): string {
  const [first = ''] = channel.paths
  const base = first
    .split('/')
    .filter((part) => !part.startsWith(':'))
    .join('/')
  return `${base}/c/:${CONNECTION_PARAM}`
}

/** Every channel forwards to the origin: without it a connection's config is not ready either. */
function withOrigin<T>(settings: Settings, config: ChannelConfig<T>): ChannelConfig<T> {
  if (settings.origin) return config
  const missing = ['ORIGIN_URL', 'ORIGIN_SHARED_SECRET']
  return { ok: false, missing: [...(config.ok ? [] : config.missing), ...missing] }
}

/** The connection the route names, or the error its route answers. */
export function byRoute<T>(
  env: Env,
  channel: WebhookChannel<string, T>,
  id: string,
): ConfigPicker<T> {
  return async (settings) => {
    const lookup = await connectionById(env, channel.name as ConnectionChannel, id)
    const read = usableConnection(channel.name, lookup, `route ${id}`)
    const picked = await connectionConfig(env, channel, read)
    return { ...picked, config: withOrigin(settings, picked.config) }
  }
}

/** On a shared path: the connection its index names, else the channel's variables. */
export function byIndexOrVariables<T>(
  env: Env,
  channel: WebhookChannel<string, T>,
  params: PathParams = {},
): ConfigPicker<T> {
  return async (settings, body): Promise<PickedConfig<T>> => {
    const variables = { config: channelConfig(settings, channel) as ChannelConfig<T> }
    if (!hasRegistry(env)) return variables
    const found = await indexLookup(env, channel.name, params, body)
    if (found === null || found.lookup.kind === 'none') return variables
    const read = usableConnection(channel.name, found.lookup, `index ${found.id}`)
    const picked = await connectionConfig(env, channel, read)
    return { ...picked, config: withOrigin(settings, picked.config) }
  }
}

/** The index entry a shared-path request names (its body's id, or its account), if any. */
async function indexLookup(
  env: Env,
  name: string,
  params: PathParams,
  body: () => Promise<RequestParts>,
): Promise<{ id: string; lookup: Lookup } | null> {
  let id: string | null = null
  if (hasIndex(name)) id = indexIdOf(name, await body())
  else if (hasAccountHint(name)) id = await accountHintOf(name, params, env, body)
  else return null
  if (id === null) return null
  return { id, lookup: await connectionByIndex(env, name as ConnectionChannel, id) }
}
