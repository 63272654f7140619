/**
 * Teams' shared path names its bot only inside the token (its audience), so the registry is
 * asked after the JWT verified, by the bot it verified for (`idx:teams:<appId>`): a bot the
 * registry holds is served by its connection (the event names it), a disabled one is refused
 * (403), an index entry KV cannot resolve is the retry answer; a bot the registry does not hold
 * stays the variables' (TEAMS_APP_IDS), as before.
 * @module
 */
import type { EventConnection } from '../../contract/connection'
import type { Env } from '../env'
import { RetryLaterError } from '../errors'
import { usableConnection } from './config'
import { connectionByIndex, hasRegistry } from './reader'

/** The channels whose tenant is known only once verified. */
const AFTER_VERIFY = new Set(['teams'])

/** The registry's connection of a tenant the variables verified, or null when it holds none. */
export async function verifiedTenantConnection(
  env: Env,
  channel: string,
  tenant: string | null,
): Promise<EventConnection | null> {
  if (tenant === null || !hasRegistry(env) || !AFTER_VERIFY.has(channel)) return null
  const lookup = await connectionByIndex(env, 'teams', tenant)
  if (lookup.kind === 'none') return null
  const { record } = usableConnection(channel, lookup, `index ${tenant}`)
  // A record that is not this bot's (KV inconsistent): never served as it, nor by the variables.
  if (record.account !== tenant)
    throw new RetryLaterError(`${channel}: connection_unusable ${record.id}`)
  return { id: record.id, version: record.version }
}
