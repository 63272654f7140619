/**
 * Where one URL serves a whole app (Slack's Request URL, a Meta app's callback, LINE's bare
 * path), the id a request's body names for its connection's index (`idx:<channel>:<id>`): read
 * from the bounded body before verification, in one linear pass (JSON.parse), as the channel's
 * own code reads it. It only picks which connection's secrets to try: a wrong or forged id fails
 * the signature, and after verifying the channel's scope checks refuse any other id the body
 * names that is not the connection's.
 * @module
 */
import {
  CONNECTION_KINDS,
  type ConnectionChannel,
  type ConnectionKind,
} from '../../contract/connection'
import { slackAppIdOf } from '../channels/slack'
import type { RequestParts } from '../channels/types'
import { list, obj, str } from '../channels/untrusted'

type Json = Record<string, unknown>

function json(parts: RequestParts): Json | null {
  try {
    return obj(JSON.parse(parts.body.text))
  } catch {
    return null
  }
}

/** The first Meta entry's id (Messenger's Page, Instagram's account). */
const firstEntryId = (body: Json | null) => str(obj(list(body?.entry)[0])?.id)

/** WhatsApp's entries are WABAs: the phone number of the first change is the connection's id. */
const firstPhoneNumberId = (body: Json | null) => {
  const change = obj(list(obj(list(body?.entry)[0])?.changes)[0])
  return str(obj(obj(change?.value)?.metadata)?.phone_number_id)
}

const READERS: Partial<Record<ConnectionChannel, (parts: RequestParts) => string | null>> = {
  slack: slackAppIdOf,
  line: (parts) => str(json(parts)?.destination),
  'whatsapp-cloud': (parts) => firstPhoneNumberId(json(parts)),
  messenger: (parts) => firstEntryId(json(parts)),
  instagram: (parts) => firstEntryId(json(parts)),
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
