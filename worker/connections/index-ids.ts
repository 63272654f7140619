/**
 * Where one URL serves a whole app (Slack's Request URL, a Meta app's callback, LINE's bare
 * path), the id a request's body names for its connection's index (`idx:<channel>:<id>`): read
 * from the body's first 8 KiB before verification, in one linear pass that builds no tree
 * (json-prefix.ts; Slack's by the channel's own code). It only picks which connection's secrets
 * to try: a wrong or forged id fails the signature, and after verifying the channel's scope
 * checks refuse a delivery scoped by an id that is not the connection's.
 * @module
 */
import {
  CONNECTION_KINDS,
  type ConnectionChannel,
  type ConnectionKind,
} from '../../contract/connection'
import { slackAppIdOf } from '../channels/slack'
import type { RequestParts } from '../channels/types'
import { stringAt } from './json-prefix'

/** The string at `path` in the body's bounded prefix (json-prefix.ts). */
const at =
  (...path: Array<string | number>) =>
  (parts: RequestParts) =>
    stringAt(parts.body.text, path)

const READERS: Partial<Record<ConnectionChannel, (parts: RequestParts) => string | null>> = {
  slack: slackAppIdOf,
  line: at('destination'),
  // WhatsApp's entries are WABAs: the phone number of the first change is the connection's id.
  'whatsapp-cloud': at('entry', 0, 'changes', 0, 'value', 'metadata', 'phone_number_id'),
  // The first Meta entry's id (Messenger's Page, Instagram's account).
  messenger: at('entry', 0, 'id'),
  instagram: at('entry', 0, 'id'),
}

/** Whether the channel's shared path finds connections by an index. */
export function hasIndex(channel: string): channel is ConnectionChannel {
  return Object.hasOwn(READERS, channel)
}

/** The index id of a request, when it names one of the form the channel's ids take. */
export function indexIdOf(channel: ConnectionChannel, parts: RequestParts): string | null {
  const id = READERS[channel]?.(parts) ?? null
  if (id === null) return null
  const kind: ConnectionKind = CONNECTION_KINDS[channel]
  const pattern = kind.index === 'ids' && kind.ids ? kind.ids.pattern : kind.account.pattern
  return pattern.test(id) ? id : null
}
