/**
 * The states of a claim and how they are written in Redis. One string per delivery key:
 *   inflight|{token}|{hash}   claimed by one attempt, PX lease (outlives one forward)
 *   {hash56}1                 done: the origin took it (new or duplicate), EX dedup TTL
 *   {hash56}2                 spooled: on the spool queue for a later forward, EX dedup TTL
 * `{hash}` is the event's payload hash, so a replay with another payload under the same key is seen.
 *
 * A settled value lives for the whole dedup TTL, so it is the one that costs memory: it is one
 * decimal integer, one more than the first 56 bits of the hash (14 hex digits), times ten, plus
 * the state digit (1 done, 2 spooled), which Redis keeps inside the value object itself (an int-encoded string,
 * no allocation of its own): 16 bytes a key less than `done|{hash}` as a string (bench: Slack
 * keys 120 → 88 B by MEMORY USAGE). 56 bits of hash tell a payload mismatch as well as 64 did.
 * The short-lived in-flight value stays text, and so does a settled value whose hash is not
 * lower-case hex (an event without a payload hash): `done|{hash}`, `spooled|{hash}`.
 * @module
 */

export const ClaimState = {
  inflight: 'inflight',
  done: 'done',
  spooled: 'spooled',
} as const
export type ClaimState = (typeof ClaimState)[keyof typeof ClaimState]

export type ClaimOutcome =
  /** This attempt holds the claim; only the holder of `token` may complete or release it. */
  | { status: 'claimed' }
  /** The origin (or the spool) already has it. `hash` null when the value was not ours to read. */
  | { status: 'settled'; state: 'done' | 'spooled'; hash: string | null }
  /** Another attempt holds the claim right now. */
  | { status: 'inflight'; hash: string | null }
  /** Redis did not answer within its budget (or errored). */
  | { status: 'unavailable'; error: unknown }

/** 64 random bits: tells one attempt's claim from another's. */
export function newClaimToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8))
  let out = ''
  for (const b of bytes) out += b.toString(16).padStart(2, '0')
  return out
}

export function inflightValue(token: string, hash: string): string {
  return `${ClaimState.inflight}|${token}|${hash}`
}

/** Hex digits of the payload hash a settled value keeps (56 bits: the value stays below 2^63). */
export const SETTLED_HASH_HEX = 14
const STATE_DIGIT = { done: 1n, spooled: 2n } as const
/** Decimal integers at least 10: a settled value (one digit is no value written here). */
const SETTLED_INTEGER = /^[1-9][0-9]{1,18}$/

export function settledValue(state: 'done' | 'spooled', hash: string): string {
  // Payload hashes are lower-case hex (contract/event.ts); anything else keeps the text form.
  if (!/^[0-9a-f]{14}/.test(hash)) return `${state}|${hash}`
  const prefix = BigInt(`0x${hash.slice(0, SETTLED_HASH_HEX)}`)
  // One more than the prefix, so that a value always has two digits (SETTLED_INTEGER).
  return ((prefix + 1n) * 10n + STATE_DIGIT[state]).toString()
}

/** The stored hash (possibly a settled value's 56-bit prefix) is this event's hash. */
export function sameHash(stored: string, hash: string): boolean {
  return hash.startsWith(stored)
}

function decodeSettledInteger(
  value: string,
): Exclude<ClaimOutcome, { status: 'claimed' | 'unavailable' | 'inflight' }> {
  const n = BigInt(value)
  const hash = (n / 10n - 1n).toString(16).padStart(SETTLED_HASH_HEX, '0')
  return n % 10n === STATE_DIGIT.spooled
    ? { status: 'settled', state: 'spooled', hash }
    : { status: 'settled', state: 'done', hash: n % 10n === STATE_DIGIT.done ? hash : null }
}

/** Reads a stored value. Anything unknown counts as done: a value is there, so it was seen. */
export function decodeValue(
  value: string,
): Exclude<ClaimOutcome, { status: 'claimed' | 'unavailable' }> {
  if (SETTLED_INTEGER.test(value)) return decodeSettledInteger(value)
  const [state, first, second] = value.split('|')
  if (state === ClaimState.inflight) return { status: 'inflight', hash: second ?? null }
  if (state === ClaimState.spooled)
    return { status: 'settled', state: 'spooled', hash: first ?? null }
  return {
    status: 'settled',
    state: 'done',
    hash: state === ClaimState.done ? (first ?? null) : null,
  }
}
