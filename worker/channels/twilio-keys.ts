/**
 * Twilio's parts of a Redis key, short enough that a key stays within 43 characters (88 B by
 * MEMORY USAGE; a 44-character key takes the next allocation, 104 B):
 * - a SID (two letters + 32 lower-case hex, e.g. `SM0123…cdef`) as its two letters + the 16
 *   bytes in base64url (22 characters): lossless, `SMASNFZ4mrze8BI0VniavN7w`; anything else as is;
 * - an AccountSid as its tag: the first 48 bits of its SHA-256 in base64url (8 characters).
 *   Account SIDs are Twilio's, not chosen by a sender, so two accounts of one deployment share
 *   a tag with odds of about n² / 2^49: scoping by tag keeps tenants apart as scoping by SID did.
 * `sidFromCompact` turns a compact SID back (operators reading a key in a log line or in Redis).
 * @module
 */
import { sha256Hex } from '../../shared/crypto'

const CANONICAL_SID = /^([A-Z]{2})([0-9a-f]{32})$/
const COMPACT_SID = /^([A-Z]{2})([A-Za-z0-9_-]{22})$/

function hexToBase64Url(hex: string): string {
  let binary = ''
  for (let i = 0; i < hex.length; i += 2)
    binary += String.fromCharCode(parseInt(hex.slice(i, i + 2), 16))
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** A canonical SID in its compact, lossless form; any other id unchanged. */
export function compactSid(sid: string): string {
  const match = CANONICAL_SID.exec(sid)
  return match ? `${match[1]}${hexToBase64Url(match[2] as string)}` : sid
}

/** The SID a compact form stands for (the inverse of {@link compactSid}); null if it is none. */
export function sidFromCompact(compact: string): string | null {
  const match = COMPACT_SID.exec(compact)
  if (!match) return null
  const binary = atob((match[2] as string).replace(/-/g, '+').replace(/_/g, '/'))
  let hex = ''
  for (let i = 0; i < binary.length; i++) hex += binary.charCodeAt(i).toString(16).padStart(2, '0')
  return `${match[1]}${hex}`
}

/** Tags by AccountSid: a deployment serves a few accounts, so a small map spares the digest. */
const tags = new Map<string, Promise<string>>()
const MAX_CACHED_TAGS = 1_000

/** The account's 8-character tag in keys: base64url of the first 6 bytes of SHA-256(AccountSid). */
export function accountTag(accountSid: string): Promise<string> {
  let tag = tags.get(accountSid)
  if (!tag) {
    // Shared tokens verify any AccountSid: bound the map, whatever senders claim to be.
    if (tags.size >= MAX_CACHED_TAGS) tags.clear()
    tag = sha256Hex(accountSid).then((hex) => hexToBase64Url(hex.slice(0, 12)))
    tags.set(accountSid, tag)
  }
  return tag
}
