/**
 * Which inbox a mail delivered by Cloudflare Email Routing belongs to, from the registry: the
 * envelope recipient, lower-cased and without its `+tag` (email/mailbox.ts), is looked up as
 * `idx:email:<address>` (the origin publishes one entry for a mailbox connection's account and
 * one for each alias) → the mailbox connection, whose aliases the parser then keys with. One KV
 * get per key on a memo miss (reader.ts), none without the CONNECTIONS binding.
 *
 * The Gmail poller keys a mail by the polled mailbox (the connection's account), so the same
 * mail is one key both ways once the edge has the connection; until then (a new alias, within
 * KV's propagation bound) a mail to the alias is keyed as its own address, as it was before the
 * alias existed. docs/connections.md ("Mailboxes") says how to add an alias without that window.
 * @module
 */
import type { EventConnection } from '../../contract/connection'
import { connectionAliases, type MailboxAliases, withoutSubaddress } from '../../email/mailbox'
import type { Env } from '../env'
import { connectionByIndex, hasRegistry } from './reader'

export type MailboxPick =
  /** No registry, or no entry for the address: EMAIL_MAILBOX_ALIASES, as before. */
  | { kind: 'variables' }
  | { kind: 'connection'; aliases: MailboxAliases; connection: EventConnection }
  /** The connection is disabled: not taken now (a temporary SMTP error; the sender retries). */
  | { kind: 'disabled'; connection: EventConnection }
  /** KV failed or holds what cannot be used: never a verdict, the sender retries. */
  | { kind: 'unavailable'; reason: string }

/** The mailbox connection of envelope recipient `recipient`, if the registry has one. */
export async function pickMailbox(env: Env, recipient: string): Promise<MailboxPick> {
  if (!hasRegistry(env)) return { kind: 'variables' }
  // Not an address: the parser bounces it (bad_mailbox) whatever the registry holds.
  const address = withoutSubaddress(recipient)
  if (address === null) return { kind: 'variables' }
  const lookup = await connectionByIndex(env, 'email', address)
  if (lookup.kind === 'none') return { kind: 'variables' }
  if (lookup.kind === 'unavailable') return lookup
  const { record } = lookup.connection
  const connection = { id: record.id, version: record.version }
  // An index entry the record no longer vouches for (an alias just moved or removed, its entry
  // not yet deleted at this location): neither mailbox is certain, so not now.
  if (record.account !== address && !record.ids.includes(address)) {
    return { kind: 'unavailable', reason: 'index_stale' }
  }
  if (record.status !== 'active') return { kind: 'disabled', connection }
  return { kind: 'connection', aliases: connectionAliases(record), connection }
}
