/**
 * Delivery keys: what one vendor delivery is, as Redis key material. Channels build them (the
 * Worker's channels/, and email/parse.ts for both email paths); the claim store (claims/)
 * prefixes them with the deployment's REDIS_KEY_PREFIX.
 * @module
 */
import { sha256Hex } from '../shared/crypto'

/**
 * `dedup:{namespace}:{scope}:{id}`. The namespace is the channel, or a channel-specific namespace
 * for deliveries that are not messages (Twilio status callbacks, Slack interactions), so the two
 * can never collide.
 */
export interface DeliveryKey {
  namespace: string
  /** Who owns the id: Slack app, Twilio account, Telegram bot, mailbox (the verified tenant). */
  scope: string
  /** How the scope is written in the key when not as itself (Twilio: a short tag of the account). */
  scopeTag?: string
  id: string
  /** True when the vendor id was missing and a hash of the payload stands in (logged). */
  fallback?: boolean
}

export function formatDeliveryKey(key: DeliveryKey): string {
  return `dedup:${key.namespace}:${key.scopeTag ?? key.scope}:${key.id}`
}

/** What a key part may hold as it is: base64-like vendor ids, no `:`, `%`, `~` or controls. */
const PLAIN = /^[A-Za-z0-9._+/=-]{1,200}$/
/** A key part written out at most this long; a longer one is its hash. */
const MAX_PART_CHARS = 200

/**
 * A vendor id as one part of a delivery key, whatever its spelling: as it is when it is plain
 * (every id the channels keyed before, so their keys are unchanged), else each byte outside the
 * plain set as `%XX` (a lone surrogate `%uXXXX`), else (too long written so) `~` and the base64url SHA-256 of the id. The
 * three forms cannot meet (only the second holds `%`, only the third `~`), and each is one-to-one,
 * so a separator or a control character in an id never makes one key another's.
 */
export async function keyPart(value: string): Promise<string> {
  if (PLAIN.test(value)) return value
  const escaped = escapePart(value)
  if (escaped.length <= MAX_PART_CHARS) return escaped
  const hex = await sha256Hex(value)
  const bytes = Uint8Array.from(hex.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16))
  return `~${btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '')}`
}

function escapePart(value: string): string {
  let out = ''
  for (const char of value) {
    if (/^[A-Za-z0-9._+/=-]$/.test(char)) {
      out += char
      continue
    }
    const unit = char.charCodeAt(0)
    if (char.length === 1 && unit >= 0xd800 && unit <= 0xdfff) {
      // A lone surrogate has no UTF-8 bytes of its own (they would all read as U+FFFD).
      out += `%u${unit.toString(16).toUpperCase()}`
      continue
    }
    for (const byte of new TextEncoder().encode(char)) {
      out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
    }
  }
  return out
}
