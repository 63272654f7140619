/**
 * One spooled event as it sits in a Redis list: a small JSON envelope around the exact body the
 * gateway forwards (the normalized event, already verified and validated), plus what the drain
 * needs to settle the delivery's claim afterwards. A random id makes every entry's string unique,
 * so the drain can remove exactly this entry (`LREM key 1 <entry>`) and never a twin.
 * @module
 */
import { type InboundEvent, parseInboundEvent } from '../../contract/event'
import { newClaimToken } from '../dedup/claims'

export interface SpoolEntry {
  /** Envelope version. */
  v: 1
  /** 64 random bits: keeps two spoolings of the same event apart in the list. */
  id: string
  /** The claim's Redis key without the deployment prefix (`dedup:{namespace}:{scope}:{id}`). */
  claimKey: string
  /** The event's payload hash: the claim reads `spooled|{hash}`, then `done|{hash}`. */
  hash: string
  /** When it was spooled (epoch ms), for the log's age of an entry. */
  spooledAt: number
  /** The forward body: `JSON.stringify(event)`. Re-signed with a fresh timestamp on each drain. */
  body: string
}

export type DecodedEntry =
  | { ok: true; entry: SpoolEntry; event: InboundEvent }
  | { ok: false; reason: string }

export function encodeEntry(claimKey: string, event: InboundEvent, now = Date.now()): string {
  const entry: SpoolEntry = {
    v: 1,
    id: newClaimToken(),
    claimKey,
    hash: event.payloadHash,
    spooledAt: now,
    body: JSON.stringify(event),
  }
  return JSON.stringify(entry)
}

/**
 * Reads an entry back. Anything malformed (hand-edited, truncated, from a future version) is not
 * forwardable and goes to the dead list instead of blocking its channel; `reason` names what was
 * wrong, never a value.
 */
export function decodeEntry(raw: string): DecodedEntry {
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    return { ok: false, reason: 'entry is not JSON' }
  }
  const entry = value as Partial<SpoolEntry> | null
  if (
    entry === null ||
    typeof entry !== 'object' ||
    entry.v !== 1 ||
    typeof entry.id !== 'string' ||
    typeof entry.claimKey !== 'string' ||
    !entry.claimKey.startsWith('dedup:') ||
    typeof entry.hash !== 'string' ||
    typeof entry.spooledAt !== 'number' ||
    typeof entry.body !== 'string'
  ) {
    return { ok: false, reason: 'entry envelope is malformed' }
  }
  let event: unknown
  try {
    event = JSON.parse(entry.body)
  } catch {
    return { ok: false, reason: 'entry body is not JSON' }
  }
  const parsed = parseInboundEvent(event)
  if (!parsed.ok) return { ok: false, reason: parsed.message }
  return { ok: true, entry: entry as SpoolEntry, event: parsed.event }
}

/** Size in bytes as Redis stores it (UTF-8). */
export function entryBytes(raw: string): number {
  return new TextEncoder().encode(raw).byteLength
}
